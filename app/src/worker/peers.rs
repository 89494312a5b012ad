//! The workers of the pool helping each other: a run's batched model calls (SMC's
//! particles, an enumeration's prefixes) split over the idle workers, where the page
//! cannot share the rows of each product instead (`split.rs`: not cross-origin isolated,
//! `?split=off`, a helper lost) or the batch is too large for its buffer.
//!
//! The page links every two loaded workers with a `MessageChannel` (`ToWorker::Peer`, the
//! port transferred) and says when one is gone (`ToWorker::PeerGone`). A worker driving a
//! job wraps its model in [`PooledLm`]: a batch of several sequences is cut into
//! contiguous parts, the first computed here and each other part sent to a peer
//! ([`PeerMessage::Help`]: the prompt and the prefixes); the peer answers with the
//! log-probabilities ([`PeerMessage::Helped`]: `Float64Array`s, their buffers transferred)
//! from its own copy of the model, conditioned on the same prompt and kept for the next
//! call. A peer with a job of its own, or already helping, answers `Busy`, and that part is
//! computed here instead. A sequence's log-probabilities do not depend on which worker, cache
//! slot or batch computed it, so a run draws the same samples however it is split.

use super::peer_protocol::PeerMessage;
use crate::engine::{BackendLm, Engine, StopCheck};
use sampler_core::{LanguageModel, LmError, TokenId};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// Calls split by sequence a peer that answered `busy` is left alone for.
const BUSY_BACKOFF: u64 = 4;

/// One linked peer.
struct Link {
    index: u32,
    port: web_sys::MessagePort,
    gone: Cell<bool>,
}

/// A peer's answer to one request.
enum Answer {
    /// The log-probabilities of each prefix and the tokens it ran to get them.
    Done(Vec<Vec<f64>>, u64),
    /// It had a job of its own (or was gone): compute the part here.
    Busy,
    /// Its model failed (one line).
    Failed(String),
}

/// A request waiting for its answer.
struct Waiting {
    peer: u32,
    slot: Rc<RefCell<Option<Answer>>>,
    resolve: js_sys::Function,
}

/// What this worker holds for the pool.
#[derive(Default)]
struct Peers {
    links: Vec<Rc<Link>>,
    next_id: u64,
    waiting: HashMap<u64, Waiting>,
    /// The model this worker helps with, conditioned on the last prompt asked for; `None`
    /// while a request is using it.
    helper: Option<(Vec<TokenId>, BackendLm)>,
    /// Whether the requests are being served; the ones that came meanwhile wait in
    /// `queue`, in order.
    serving: bool,
    queue: std::collections::VecDeque<Request>,
}

/// A peer's request waiting to be served.
struct Request {
    id: u64,
    /// The peer that asked.
    from: u32,
    /// A warm-up (the prompt alone, answer unread): not counted as help.
    warm: bool,
    prompt: Vec<TokenId>,
    prefixes: Vec<Vec<TokenId>>,
    reply_to: web_sys::MessagePort,
}

thread_local! {
    static PEERS: RefCell<Peers> = RefCell::new(Peers::default());
}

/// Where this worker's own jobs and model are (the host's), for serving requests.
pub struct HostView {
    /// The loaded model, if any.
    pub engine: fn() -> Option<Rc<Engine>>,
    /// Whether this worker has a job of its own under way.
    pub busy: fn() -> bool,
    /// Tells the page that this worker computed `n` sequences for a peer.
    pub helped: fn(u64),
}

/// Links the peer `index` through `port`; `host` answers its requests.
pub fn link(index: u32, port: web_sys::MessagePort, host: &'static HostView) {
    let link = Rc::new(Link {
        index,
        port: port.clone(),
        gone: Cell::new(false),
    });
    let weak = Rc::downgrade(&link);
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            if let Some(link) = weak.upgrade() {
                on_message(&link, e.data(), host);
            }
        });
    port.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    PEERS.with(|p| p.borrow_mut().links.push(link));
}

/// Invites every peer to help with this worker's products (`PeerMessage::Assist`, see
/// `split.rs`), stamped with the split buffer's leave count `leave`; a busy peer ignores
/// it, and so does one that gets it after a driver said leave; `invite` is its number.
pub fn invite(leave: i32, invite: i32) {
    let links: Vec<Rc<Link>> = PEERS.with(|p| p.borrow().links.clone());
    for l in links.iter().filter(|l| !l.gone.get()) {
        if let Err(e) = (PeerMessage::Assist { leave, invite }).post(&l.port, &js_sys::Array::new())
        {
            web_sys::console::error_1(&format!("worker: cannot invite a peer: {e}").into());
        }
    }
}

/// Drops the model kept for serving peers (its KV caches): this worker starts a job of its
/// own, and peers are answered `busy` until it ends.
pub fn release_helper() {
    PEERS.with(|p| p.borrow_mut().helper = None);
}

/// Peer `index` is gone: its requests are answered `busy` (computed here), and it is not
/// asked again.
pub fn gone(index: u32) {
    let stranded: Vec<Waiting> = PEERS.with(|p| {
        let mut p = p.borrow_mut();
        p.links.retain(|l| {
            if l.index == index {
                l.gone.set(true);
                l.port.close();
            }
            l.index != index
        });
        // Its requests still queued here would answer a closed port.
        p.queue.retain(|r| r.from != index);
        let ids: Vec<u64> = (p.waiting.iter())
            .filter(|(_, w)| w.peer == index)
            .map(|(&id, _)| id)
            .collect();
        ids.into_iter()
            .filter_map(|id| p.waiting.remove(&id))
            .collect()
    });
    for w in stranded {
        answer(w, Answer::Busy);
    }
}

fn answer(w: Waiting, a: Answer) {
    *w.slot.borrow_mut() = Some(a);
    let _ = w.resolve.call0(&JsValue::NULL);
}

fn on_message(link: &Rc<Link>, data: JsValue, host: &'static HostView) {
    let msg = match PeerMessage::from_js(data) {
        Ok(m) => m,
        Err(e) => {
            web_sys::console::error_1(&format!("worker: {e}").into());
            return;
        }
    };
    let (id, a) = match msg {
        PeerMessage::Help {
            id,
            warm,
            prompt,
            prefixes,
        } => {
            let r = Request {
                id,
                from: link.index,
                warm,
                prompt,
                prefixes,
                reply_to: link.port.clone(),
            };
            return enqueue(r, host);
        }
        PeerMessage::Helped {
            id,
            logprobs,
            forward_tokens,
        } => match PeerMessage::rows(&logprobs) {
            Some(rows) => (id, Answer::Done(rows, forward_tokens)),
            None => (id, Answer::Failed("a malformed answer from a peer".into())),
        },
        PeerMessage::Busy { id } => (id, Answer::Busy),
        PeerMessage::Failed { id, message } => (id, Answer::Failed(message)),
        PeerMessage::Assist { leave, invite } => {
            let serving = PEERS.with(|p| p.borrow().serving);
            if !(host.busy)()
                && !serving
                && let Some(engine) = (host.engine)()
            {
                super::split::assist(&engine, leave, invite);
            }
            return;
        }
    };
    if let Some(w) = PEERS.with(|p| p.borrow_mut().waiting.remove(&id)) {
        answer(w, a);
    }
}

/// Serves `r` after the requests before it, unless this worker has a job of its own
/// (then it answers `busy` at once).
fn enqueue(r: Request, host: &'static HostView) {
    if (host.busy)() {
        return reply(&r.reply_to, r.id, Answer::Busy);
    }
    let start = PEERS.with(|p| {
        let mut p = p.borrow_mut();
        p.queue.push_back(r);
        !std::mem::replace(&mut p.serving, true)
    });
    if start {
        wasm_bindgen_futures::spawn_local(async move {
            while let Some(r) = PEERS.with(|p| p.borrow_mut().queue.pop_front()) {
                let a = serve_inner(r.prompt, &r.prefixes, host).await;
                if matches!(a, Answer::Done(..)) && !r.warm {
                    (host.helped)(r.prefixes.len() as u64);
                }
                reply(&r.reply_to, r.id, a);
            }
            PEERS.with(|p| p.borrow_mut().serving = false);
        });
    }
}

/// Computes a peer's request with this worker's model, conditioned on the request's prompt
/// (kept for the next request).
async fn serve_inner(prompt: Vec<TokenId>, prefixes: &[Vec<TokenId>], host: &HostView) -> Answer {
    let kept = PEERS.with(|p| p.borrow_mut().helper.take());
    let mut lm = match kept {
        Some((p, lm)) if p == prompt => lm,
        _ => {
            let Some(engine) = (host.engine)() else {
                return Answer::Busy;
            };
            let never: StopCheck = Rc::new(|| false);
            match engine.lm(prompt.clone(), never) {
                Ok(lm) => lm,
                Err(e) => return Answer::Failed(e),
            }
        }
    };
    let before = lm.forward_tokens();
    let refs: Vec<&[TokenId]> = prefixes.iter().map(Vec::as_slice).collect();
    let result = lm.logprobs_batch(&refs).await;
    let ran = lm.forward_tokens() - before;
    PEERS.with(|p| p.borrow_mut().helper = Some((prompt, lm)));
    match result {
        Ok(rows) => Answer::Done(rows, ran),
        Err(e) => Answer::Failed(e.0),
    }
}

fn reply(port: &web_sys::MessagePort, id: u64, a: Answer) {
    let (msg, transfer) = match a {
        Answer::Done(rows, tokens) => PeerMessage::helped(id, &rows, tokens),
        Answer::Busy => (PeerMessage::Busy { id }, js_sys::Array::new()),
        Answer::Failed(message) => (PeerMessage::Failed { id, message }, js_sys::Array::new()),
    };
    if let Err(e) = msg.post(port, &transfer) {
        web_sys::console::error_1(&format!("worker: cannot answer a peer: {e}").into());
    }
}

/// A request sent to a peer: its answer arrives in `slot`, and `promise` resolves then.
struct Asked {
    promise: js_sys::Promise,
    slot: Rc<RefCell<Option<Answer>>>,
}

/// How long a driver waits for a peer's answer before computing that part itself (a
/// peer that hangs without dying): far longer than any batch takes.
const ANSWER_TIMEOUT_MS: i32 = 60_000;

impl Asked {
    /// The peer's answer; `Busy` if it never came (the peer is gone) or took longer than
    /// [`ANSWER_TIMEOUT_MS`].
    async fn answer(self) -> Answer {
        let timeout = js_sys::Promise::new(&mut |resolve, _| {
            let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
            let _ = scope
                .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ANSWER_TIMEOUT_MS);
        });
        let race = js_sys::Promise::race(&js_sys::Array::of2(&self.promise, &timeout));
        let _ = JsFuture::from(race).await;
        self.slot.borrow_mut().take().unwrap_or(Answer::Busy)
    }
}

/// Sends `prefixes` (after `prompt`) to `link`; `warm` marks the first call's warm-up.
fn ask(link: &Link, prompt: &[TokenId], prefixes: &[&[TokenId]], warm: bool) -> Asked {
    let mut resolve = None;
    let promise = js_sys::Promise::new(&mut |r, _| resolve = Some(r));
    let resolve = resolve.expect("the executor runs at once");
    let slot = Rc::new(RefCell::new(None));
    let id = PEERS.with(|p| {
        let mut p = p.borrow_mut();
        p.next_id += 1;
        let id = p.next_id;
        p.waiting.insert(
            id,
            Waiting {
                peer: link.index,
                slot: slot.clone(),
                resolve: resolve.clone(),
            },
        );
        id
    });
    let msg = PeerMessage::Help {
        id,
        warm,
        prompt: prompt.to_vec(),
        prefixes: prefixes.iter().map(|p| p.to_vec()).collect(),
    };
    if (link.gone.get() || msg.post(&link.port, &js_sys::Array::new()).is_err())
        && let Some(w) = PEERS.with(|p| p.borrow_mut().waiting.remove(&id))
    {
        answer(w, Answer::Busy);
    }
    Asked { promise, slot }
}

/// A worker's model for one job, sharing batched calls with the idle peers.
pub struct PooledLm {
    local: BackendLm,
    prompt: Vec<TokenId>,
    /// Tokens the peers ran for this job.
    remote_tokens: u64,
    /// Calls split by sequence so far (a batch kept for sharing by rows is not one), and
    /// until which such call each busy peer is left alone.
    calls: u64,
    resting: HashMap<u32, u64>,
    /// Who computed each sequence of the last call split by sequence (`None`: this
    /// worker), so the next one's sequences go where their prefix is cached.
    owner: HashMap<Vec<TokenId>, Option<u32>>,
    /// The first such call's warm-up requests, read at the next one (their tokens).
    warmups: Vec<Asked>,
}

impl PooledLm {
    /// `local` (conditioned on `prompt`) with the pool's help.
    pub fn new(local: BackendLm, prompt: Vec<TokenId>) -> Self {
        PooledLm {
            local,
            prompt,
            remote_tokens: 0,
            calls: 0,
            resting: HashMap::new(),
            owner: HashMap::new(),
            warmups: Vec::new(),
        }
    }
}

impl LanguageModel for PooledLm {
    fn vocab_size(&self) -> usize {
        self.local.vocab_size()
    }

    fn eos(&self) -> TokenId {
        self.local.eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        self.logprobs_batch(&[prefix])
            .await
            .map(|mut v| v.remove(0))
    }

    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        if super::split::keeps_batch(prefixes.len(), self.vocab_size()) {
            // The idle workers share its products' rows instead (`split.rs`).
            let _kept = super::split::KeptBatch::enter(prefixes.len());
            return self.local.logprobs_batch(prefixes).await;
        }
        self.calls += 1;
        let calls = self.calls;
        let peers: Vec<Rc<Link>> = PEERS.with(|p| {
            p.borrow()
                .links
                .iter()
                .filter(|l| !l.gone.get() && self.resting.get(&l.index).is_none_or(|&u| u < calls))
                .cloned()
                .collect()
        });
        if calls == 1 {
            // The peers condition their copies on the prompt while this worker does: a
            // first request for the prompt's own next-token distribution, answer unread.
            // Peers helping with products (`split.rs`) answer only outside that loop.
            super::split::leave();
            self.warmups = peers
                .iter()
                .map(|l| ask(l, &self.prompt, &[&[]], true))
                .collect();
        }
        if peers.is_empty() || prefixes.len() < 2 {
            return self.local.logprobs_batch(prefixes).await;
        }
        // Worker 0 is this one, worker j ≥ 1 is `peers[j - 1]`.
        let workers: Vec<Option<u32>> = std::iter::once(None)
            .chain(peers.iter().map(|l| Some(l.index)))
            .collect();
        let assigned = playground::batch_split::assign(prefixes, &workers, &self.owner);
        let part = |j: usize| -> (Vec<usize>, Vec<&[TokenId]>) {
            (0..prefixes.len())
                .filter(|&i| assigned[i] == j)
                .map(|i| (i, prefixes[i]))
                .unzip()
        };
        // Every peer's request goes out first, then this worker computes its own part.
        super::split::leave();
        let mut asked = Vec::new();
        for (j, link) in peers.iter().enumerate() {
            let (idx, seqs) = part(j + 1);
            if !seqs.is_empty() {
                asked.push((ask(link, &self.prompt, &seqs, false), idx, link.index));
            }
        }
        let mut out: Vec<Vec<f64>> = vec![Vec::new(); prefixes.len()];
        let (mine, seqs) = part(0);
        for (i, row) in mine
            .into_iter()
            .zip(self.local.logprobs_batch(&seqs).await?)
        {
            out[i] = row;
        }
        // The warm-ups were served before these requests (a peer serves in order).
        for w in std::mem::take(&mut self.warmups) {
            if let Answer::Done(_, tokens) = w.answer().await {
                self.remote_tokens += tokens;
            }
        }
        let mut owner: HashMap<Vec<TokenId>, Option<u32>> = HashMap::new();
        for (asked, idx, peer) in asked {
            let a = asked.answer().await;
            if let Answer::Failed(e) = &a {
                web_sys::console::warn_1(
                    &format!("a peer failed ({e}); computing its part here").into(),
                );
            }
            let rows = match a {
                Answer::Done(rows, tokens) if rows.len() == idx.len() => {
                    self.remote_tokens += tokens;
                    owner.extend(idx.iter().map(|&i| (prefixes[i].to_vec(), Some(peer))));
                    rows
                }
                Answer::Done(..) => {
                    return Err(LmError(
                        "a peer answered for the wrong number of prefixes".into(),
                    ));
                }
                // A busy, gone or failing peer is left alone for a while; its part is
                // computed here.
                Answer::Busy | Answer::Failed(_) => {
                    self.resting.insert(peer, calls + BUSY_BACKOFF);
                    let seqs: Vec<&[TokenId]> = idx.iter().map(|&i| prefixes[i]).collect();
                    self.local.logprobs_batch(&seqs).await?
                }
            };
            for (i, row) in idx.into_iter().zip(rows) {
                out[i] = row;
            }
        }
        for p in prefixes {
            owner.entry(p.to_vec()).or_insert(None);
        }
        self.owner = owner;
        Ok(out)
    }

    fn forward_tokens(&self) -> u64 {
        self.local.forward_tokens() + self.remote_tokens
    }
}
