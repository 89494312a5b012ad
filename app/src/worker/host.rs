//! The worker's side: `worker_main` (called by `worker.js` once the module is
//! instantiated) listens for the page's messages, loads the model, drives runs,
//! enumerates exact distributions and runs the quick form's generations.

use super::peers::{self, HostView, PooledLm};
use super::protocol::{FromWorker, ToWorker};
use super::split::{self, DriverView};
use crate::clock::shared_clock_ms;
use crate::engine::{Choice, Ended, Engine, OnCall, Output, Request, StopCheck, TokenOut};
use hmm_burn::{BurnHmm, Precision};
use playground::constraint::ConstraintBuilder;
use playground::exact::{ExactLimits, ground_truth};
use playground::runner::{BatchReader, Outcome, Run, RunSpec};
use playground::state::PlaygroundState;
use sampler_core::DynConstraint;
use sampler_core::hmm::HmmEngine;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// What the worker holds between messages.
#[derive(Default)]
struct Host {
    engine: Option<Rc<Engine>>,
    /// Where the pool splits the model by rows: how many shares (this worker holds one).
    shares: usize,
    /// A share's holder's rows (every share but the lead's, which is in `engine`).
    share: Option<Rc<lm::shard::ShardFile>>,
    /// The constraint builder over the model's vocabulary (keeps llguidance's token trie).
    builder: Option<Rc<RefCell<ConstraintBuilder>>>,
    /// How to stop each run or enumeration under way, by the page's id.
    jobs: HashMap<u64, Rc<dyn Fn()>>,
}

thread_local! {
    static HOST: RefCell<Host> = RefCell::new(Host::default());
}

fn scope() -> web_sys::DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

/// Posts `msg` to the page. A job's last message that cannot be sent is replaced by one
/// that ends the job with the reason, so the page never waits for it forever.
fn post(msg: &FromWorker) {
    let sent = super::protocol::to_js(msg)
        .and_then(|v| scope().post_message(&v).map_err(|e| format!("{e:?}")));
    let Err(e) = sent else { return };
    web_sys::console::error_1(&format!("worker: cannot send: {e}").into());
    let why = format!("the sampling worker could not send its result: {e}");
    let fallback = match msg {
        FromWorker::Done { id, .. } => FromWorker::Done {
            id: *id,
            outcome: Outcome::Failed(why),
        },
        FromWorker::Generated { id, .. } => FromWorker::Generated {
            id: *id,
            result: Err(Ended::Failed(why)),
        },
        FromWorker::Exact { id, .. } => FromWorker::Exact {
            id: *id,
            result: Err(why),
        },
        _ => return,
    };
    if let Ok(v) = super::protocol::to_js(&fallback) {
        let _ = scope().post_message(&v);
    }
}

/// The worker's entry point (see `worker.js`): installs the message handler and says so.
#[wasm_bindgen]
pub fn worker_main() {
    console_error_panic_hook::set_once();
    // Nothing to paint here: forward passes run whole (the page's thread is free anyway).
    crate::engine::set_pausing(false);
    let handler = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(|e: web_sys::MessageEvent| {
        on_message(e.data());
    });
    scope().set_onmessage(Some(handler.as_ref().unchecked_ref()));
    handler.forget();
    post(&FromWorker::Ready);
}

/// What the pool's peers see of this worker: its model, whether it has a job, and the
/// page's count of sequences it computed for them.
static HOST_VIEW: HostView = HostView {
    engine: || HOST.with(|h| h.borrow().engine.clone()),
    busy: || HOST.with(|h| !h.borrow().jobs.is_empty()),
    helped: |sequences| post(&FromWorker::Helped { sequences }),
};

/// What the split products' driver side sees of this worker: whether it drives a job, and
/// how it invites its idle peers to help.
static DRIVER_VIEW: DriverView = DriverView {
    busy: || HOST.with(|h| !h.borrow().jobs.is_empty()),
    invite: peers::invite,
};

fn on_message(data: JsValue) {
    match serde_wasm_bindgen::from_value::<ToWorker>(data) {
        Ok(ToWorker::Run { id, spec, state }) => {
            wasm_bindgen_futures::spawn_local(drive(id, spec, *state));
        }
        Ok(ToWorker::Exact { id, state }) => {
            wasm_bindgen_futures::spawn_local(exact(id, *state));
        }
        Ok(ToWorker::Generate { id, request }) => {
            wasm_bindgen_futures::spawn_local(generate(id, request));
        }
        Ok(ToWorker::Stop { id }) => {
            if let Some(stop) = HOST.with(|h| h.borrow().jobs.get(&id).cloned()) {
                stop();
            }
        }
        Ok(ToWorker::Load { bytes }) => wasm_bindgen_futures::spawn_local(load(bytes.to_vec())),
        Ok(ToWorker::LoadShare {
            file,
            index,
            of,
            ranges,
        }) => {
            let shard = lm::shard::Shard {
                index: index as usize,
                of: of as usize,
            };
            wasm_bindgen_futures::spawn_local(load_share(file, shard, ranges));
        }
        Ok(ToWorker::Peer { index, port }) => peers::link(index, port, &HOST_VIEW),
        Ok(ToWorker::PeerGone { index }) => peers::gone(index),
        Ok(ToWorker::Split { buffer }) => {
            let (engine, share, shares) = HOST.with(|h| {
                let h = h.borrow();
                (h.engine.clone(), h.share.clone(), h.shares)
            });
            match (engine, share) {
                (Some(engine), _) => split::install(buffer, engine, &DRIVER_VIEW, shares),
                (None, Some(share)) => split::serve(buffer, share),
                (None, None) => {
                    web_sys::console::error_1(&"worker: a split buffer before the model".into())
                }
            }
        }
        // A panic aborts the module (a wasm trap), which the page sees as the worker's
        // `error` event: the path a real crash takes.
        Ok(ToWorker::Crash) => panic!("the page asked this worker to crash (a test hook)"),
        Err(e) => web_sys::console::error_1(&format!("worker: unknown message: {e}").into()),
    }
}

async fn load(bytes: Vec<u8>) {
    let t0 = crate::clock::now_ms();
    match Engine::load(bytes, Choice::Cpu, "", &|_| {}, &|_| {}).await {
        Ok(engine) => loaded(engine, t0).await,
        Err(message) => post(&FromWorker::LoadFailed { message }),
    }
}

/// Loads this worker's share of a model split by rows (`lm::shard`): the byte `ranges`
/// of `file` the page planned for it; the lead also reads the header and builds the
/// engine that runs the jobs, the others keep their rows for `split::serve`.
async fn load_share(file: web_sys::Blob, shard: lm::shard::Shard, ranges: Vec<(u64, u64)>) {
    let t0 = crate::clock::now_ms();
    let file = crate::model_file::ModelFile::from_blob(file);
    let read = async {
        let header = if shard.is_lead() {
            Some(file.header().await?)
        } else {
            None
        };
        let ranges: Vec<std::ops::Range<usize>> = ranges
            .iter()
            .map(|&(a, b)| a as usize..b as usize)
            .collect();
        let mut share = lm::shard::ShardFile::new(shard, file.size() as usize, &ranges);
        for (i, r) in ranges.iter().enumerate() {
            let bytes = file.read(r.start as u64, r.end as u64).await?;
            let piece = share.piece_mut(i);
            if bytes.length() as usize != piece.len() {
                return Err(format!(
                    "the model file ends at {} bytes, before the share's range {r:?}",
                    file.size()
                ));
            }
            bytes.copy_to(piece);
        }
        Ok::<_, String>((header, share))
    };
    HOST.with(|h| h.borrow_mut().shares = shard.of);
    match read.await {
        Ok((Some(header), share)) => match Engine::from_share(header, share) {
            Ok(engine) => loaded(engine, t0).await,
            Err(message) => post(&FromWorker::LoadFailed { message }),
        },
        Ok((None, share)) => {
            HOST.with(|h| h.borrow_mut().share = Some(Rc::new(share)));
            post(&FromWorker::Loaded {
                ms: crate::clock::now_ms() - t0,
            });
        }
        Err(message) => post(&FromWorker::LoadFailed { message }),
    }
}

/// Keeps the loaded `engine`, says so, and makes llguidance's compiler.
async fn loaded(engine: Engine, t0: f64) {
    open_hmm_engine().await;
    let builder = Rc::new(RefCell::new(ConstraintBuilder::new(engine.vocab().clone())));
    HOST.with(|h| {
        let mut h = h.borrow_mut();
        h.engine = Some(Rc::new(engine));
        h.builder = Some(builder.clone());
    });
    post(&FromWorker::Loaded {
        ms: crate::clock::now_ms() - t0,
    });
    // llguidance's compiler (its token trie: about 0.2 s in wasm), made now rather than at
    // the first grammar's run; a run sent meanwhile queues behind it.
    if let Err(e) = builder.borrow_mut().make_compiler() {
        let e = format!("worker: llguidance's compiler: {e}");
        web_sys::console::error_1(&e.into());
    }
}

/// Drives run `id` to its end and posts its batches and outcome.
async fn drive(id: u64, spec: RunSpec, state: PlaygroundState) {
    let run = Run::from_spec(spec).with_hmm_engine(hmm_engine());
    let r = run.clone();
    HOST.with(|h| h.borrow_mut().jobs.insert(id, Rc::new(move || r.cancel())));
    let stop: StopCheck = {
        let r = run.clone();
        Rc::new(move || r.is_cancelled())
    };
    let outcome = match prepare(&state, stop) {
        Ok((engine, constraint, lm)) => {
            // Before every model call (so the page sees each token as the next forward
            // pass starts) and at the end: what the run recorded since the last batch.
            let flush = {
                let (run, reader) = (run.clone(), RefCell::new(BatchReader::new()));
                Rc::new(move || {
                    if let Some(batch) = reader.borrow_mut().next(&run) {
                        let sent_at = shared_clock_ms();
                        post(&FromWorker::Batch { id, batch, sent_at });
                    }
                })
            };
            let before_call = flush.clone();
            let mut lm = OnCall::new(lm, move |_| before_call());
            let o = run.drive(&mut lm, &constraint, Some(engine.vocab())).await;
            flush();
            o
        }
        Err(e) => Outcome::Failed(e),
    };
    HOST.with(|h| h.borrow_mut().jobs.remove(&id));
    post(&FromWorker::Done { id, outcome });
}

thread_local! {
    /// Where P-GCD's HMM work (EM steps, guide table) runs in this worker: burn's CPU
    /// backend in f64, which gives the CPU reference's numbers (`hmm-burn`'s tests); in the
    /// page built with the burn engine, burn's WebGPU backend in f32 when the worker can
    /// open it ([`open_hmm_engine`]).
    static HMM_ENGINE: RefCell<Rc<dyn HmmEngine>> =
        RefCell::new(Rc::new(BurnHmm::flex(Precision::F64)));
}

fn hmm_engine() -> Rc<dyn HmmEngine> {
    HMM_ENGINE.with(|e| e.borrow().clone())
}

/// In the page built with the burn engine: moves P-GCD's HMM work onto burn's WebGPU
/// backend (this worker's own device); where WebGPU cannot be opened, it stays on burn's
/// CPU backend and the console says why.
async fn open_hmm_engine() {
    // Asked first: without WebGPU (or without an adapter) burn's device request would not
    // come back with an error to fall back on.
    #[cfg(feature = "burn-engine")]
    if let crate::webgpu::GpuStatus::Missing(why) = crate::webgpu::detect().await {
        web_sys::console::warn_1(
            &format!("worker: P-GCD's HMM stays on burn's CPU backend: {why}").into(),
        );
        return;
    }
    #[cfg(feature = "burn-engine")]
    match lm::burn::webgpu().await {
        Ok(device) => {
            let e: Rc<dyn HmmEngine> =
                Rc::new(BurnHmm::new(device, Precision::F32, "burn-webgpu-f32"));
            HMM_ENGINE.with(|h| *h.borrow_mut() = e);
        }
        Err(e) => web_sys::console::warn_1(
            &format!("worker: P-GCD's HMM stays on burn's CPU backend: {e}").into(),
        ),
    }
}

/// A stop flag registered under `id` (what Stop sets) and the check that reads it.
fn stop_flag(id: u64) -> StopCheck {
    let cancelled = Rc::new(Cell::new(false));
    let c = cancelled.clone();
    HOST.with(|h| h.borrow_mut().jobs.insert(id, Rc::new(move || c.set(true))));
    Rc::new(move || cancelled.get())
}

/// Runs the quick form's request, posting its tokens as they are drawn ([`PostTokens`]).
async fn generate(id: u64, request: Request) {
    let stop = stop_flag(id);
    let engine = HOST.with(|h| h.borrow().engine.clone());
    let mut out = PostTokens::new(id);
    let result = match engine {
        Some(engine) => engine.generate(&request, &mut out, stop).await,
        None => Err(Ended::Failed(
            "the sampling worker has no model loaded".into(),
        )),
    };
    out.flush();
    HOST.with(|h| h.borrow_mut().jobs.remove(&id));
    post(&FromWorker::Generated { id, result });
}

/// Posts the tokens of generation `id`: the first at once, the next together at most every
/// [`super::protocol::TOKENS_EVERY_MS`] (a token waits at most until the next is drawn or
/// the run ends), and all of them before anything else about the run.
struct PostTokens {
    id: u64,
    pending: Vec<TokenOut>,
    posted_at: Option<f64>,
}

impl PostTokens {
    fn new(id: u64) -> Self {
        PostTokens {
            id,
            pending: Vec::new(),
            posted_at: None,
        }
    }

    /// Posts the tokens not yet posted.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        post(&FromWorker::Tokens {
            id: self.id,
            tokens: std::mem::take(&mut self.pending),
            sent_at: shared_clock_ms(),
        });
        self.posted_at = Some(crate::clock::now_ms());
    }
}

impl Output for PostTokens {
    fn token(&mut self, token: TokenOut) {
        self.pending.push(token);
        let now = crate::clock::now_ms();
        if self
            .posted_at
            .is_none_or(|at| now - at >= super::protocol::TOKENS_EVERY_MS)
        {
            self.flush();
        }
    }
    fn rejected(&mut self) {
        self.flush();
        post(&FromWorker::Rejected { id: self.id });
    }
    fn unlikely(&mut self, mass_bound: f64) {
        self.flush();
        post(&FromWorker::Unlikely {
            id: self.id,
            mass_bound,
        });
    }
}

/// Enumerates the exact P^L of `state`'s language with the model and posts it.
async fn exact(id: u64, state: PlaygroundState) {
    let stop = stop_flag(id);
    let result = match prepare(&state, stop) {
        Ok((_, constraint, lm)) => {
            let mut lm = OnCall::new(lm, move |lm_calls| {
                post(&FromWorker::ExactProgress { id, lm_calls })
            });
            ground_truth(&mut lm, &constraint, ExactLimits::real(state.max_tokens)).await
        }
        Err(e) => Err(e),
    };
    HOST.with(|h| h.borrow_mut().jobs.remove(&id));
    post(&FromWorker::Exact { id, result });
}

type Prepared = (Rc<Engine>, DynConstraint<'static>, PooledLm);

/// The model (conditioned on the state's prompt, failing once `stop` says so) and the
/// grammar compiled over its vocabulary.
fn prepare(state: &PlaygroundState, stop: StopCheck) -> Result<Prepared, String> {
    let (engine, builder) = HOST.with(|h| {
        let h = h.borrow();
        (h.engine.clone(), h.builder.clone())
    });
    let (Some(engine), Some(builder)) = (engine, builder) else {
        return Err("the sampling worker has no model loaded".into());
    };
    // The caches kept for helping peers give way to this job's own.
    peers::release_helper();
    let constraint = builder
        .borrow_mut()
        .build(state.grammar_kind, &state.grammar)
        .map_err(|e| format!("The grammar does not compile: {e}"))?;
    let prompt = engine.prompt_tokens(&state.prompt, state.chat)?;
    let lm = PooledLm::new(engine.lm(prompt.clone(), stop)?, prompt);
    Ok((engine, constraint, lm))
}
