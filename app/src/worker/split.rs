//! A worker's products on every core: the rows of each of a worker's matrix products (one
//! sequence's, or a batch's of up to 8 sequences, [`keeps_batch`]) shared with the pool's
//! idle workers through one `SharedArrayBuffer` (`lm::forward::split` is the model's side:
//! what a product is, how its rows are cut and computed).
//!
//! The page makes the buffer where it is cross-origin isolated (`?split=off` says not to)
//! and hands it to every worker after its model has loaded (`ToWorker::Split`). A worker
//! driving a job offers each large product: it takes the buffer's lock, writes the job and
//! its activations, bumps the epoch and wakes the helpers; then it and the helpers claim
//! chunks of rows one at a time from one word (the epoch in its high half, so a helper late
//! for a job claims nothing of the next), each computes its chunks with its own copy of the
//! weights, the helpers write theirs into the buffer and mark each chunk done with the
//! epoch, and the driver gathers them. An idle worker becomes a helper when a driver
//! invites it (`PeerMessage::Assist`): it blocks in `Atomics.wait` on the epoch and leaves
//! after [`IDLE_MS`] without a job, or at once when a driver says so ([`leave`]: before
//! a batch is sent to peers, which answer only outside the loop). A helper that stops
//! answering costs the driver [`LOST_MS`] once: it computes the missing chunks itself and
//! stops offering.
//!
//! That is with every worker holding the whole model. Where the pool instead splits the
//! model by rows (`lm::shard`: the lead holds it whole, each other worker one share of
//! every matrix), the lead (share 0) runs every job and offers every product, and each
//! other worker serves the buffer ([`serve`]): it takes its share's chunks of each product
//! (one claim word a chunk), leaving the loop only briefly, after [`IDLE_MS`] without a
//! job or [`STAY_MS`] in it, to read its messages. The lead takes its own chunks and then
//! any of the others' not yet taken, so it waits only for chunks a helper has started; one
//! not done after [`LOST_MS`] (or at once where the page says a worker crashed) it
//! computes itself, and it keeps offering.
//!
//! Memory: the buffer holds one product's activations and results (about 2 MB).

use super::atomics;
use crate::engine::Engine;
use js_sys::{Atomics, Float32Array, Int32Array, SharedArrayBuffer};
use lm::forward::split::{JOB_WORDS, MAX_CHUNKS, MAX_JOB_CHUNKS, RowHelpers, SplitJob};
use lm::shard::{FileRows, ShardFile};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Control words (`Int32Array` indices).
const EPOCH: u32 = 0;
/// The claim word: the epoch's low 16 bits, then the next chunk.
const CLAIM: u32 = 1;
/// Helpers in the loop.
const LISTENING: u32 = 2;
/// The driver's lock (0 free, 1 held).
const LOCK: u32 = 3;
/// Bumped to send the helpers out of the loop.
const LEAVE: u32 = 4;
/// Chunks the helpers have computed since the buffer was made (what the page shows).
const HELPED: u32 = 5;
/// Products drivers have shared since the buffer was made.
const OFFERS: u32 = 6;
/// Microseconds drivers have waited for helpers' chunks (the synchronisation's cost, with
/// any imbalance between the workers), wrapping.
const WAITED_US: u32 = 7;
/// Products shared while a driver computed a batch of several sequences it kept
/// ([`keeps_batch`]).
const BATCH_OFFERS: u32 = 8;
/// Invitations drivers have sent (each `PeerMessage::Assist` carries its number).
const INVITES: u32 = 9;
/// Set by the page when a worker crashed: a driver stops waiting on this buffer.
const GONE: u32 = 10;
/// The job's words.
const JOB: u32 = 11;
/// Each chunk's done mark: the epoch it was computed for.
const DONE: u32 = JOB + JOB_WORDS as u32;
/// Each chunk's claim with fixed shares: the epoch of the job it was taken in.
const CLAIMS: u32 = DONE + MAX_JOB_CHUNKS as u32;
/// Control words in all.
const CONTROL: u32 = CLAIMS + MAX_JOB_CHUNKS as u32;

/// Most activation floats a job carries (64 tokens of SmolLM2's widest input, 1536).
const X_CAP: usize = 64 * 1536;
/// Most result floats (8 vectors of a 49 152-token vocabulary).
const OUT_CAP: usize = 8 * 49_152;
/// Byte offsets of the regions.
const X_AT: u32 = CONTROL * 4;
const OUT_AT: u32 = X_AT + (X_CAP as u32) * 4;
/// The buffer's size.
const BYTES: u32 = OUT_AT + (OUT_CAP as u32) * 4;

/// How long a helper waits for a job before it goes back to its messages.
pub const IDLE_MS: f64 = 30.0;
/// How long a share's holder serves the buffer at most before it reads its messages (a
/// lead busy for minutes would otherwise keep it from hearing a new buffer or a test's
/// crash); it is back in microseconds.
pub const STAY_MS: f64 = 100.0;
/// How long a driver waits for a helper's chunk before computing it itself.
pub const LOST_MS: f64 = 3_000.0;
/// Reads of a word a worker makes before it sleeps on it (tens of microseconds).
const SPIN: u32 = 2_000;
/// With fixed shares, how long the lead watches a chunk a helper has started before it
/// sleeps on it (the chunk is a fraction of a millisecond's work).
const SHARE_SPIN_MS: f64 = 0.5;
/// How long a share's holder watches for the next job before it sleeps: a token's
/// products come a fraction of a millisecond apart, but a helper that watches longer
/// takes the core from the lead wherever the machine is busy with something else (a job
/// it sleeps through costs little: the lead takes its rows).
const HELPER_SPIN_MS: f64 = 0.05;
/// Between two invitations, at least.
const INVITE_EVERY_MS: f64 = 20.0;

/// The page's buffer for its pool, where the page is cross-origin isolated and `?split`
/// is not `off`; `None` (each worker computes its products alone) otherwise.
pub fn create() -> Option<SharedArrayBuffer> {
    let isolated = js_sys::Reflect::get(&js_sys::global(), &"crossOriginIsolated".into())
        .is_ok_and(|v| v.is_truthy());
    if !crate::page_state::split_choice() || !isolated {
        return None;
    }
    Some(SharedArrayBuffer::new(BYTES))
}

/// Tells the drivers of `buffer` (a pool's buffer that a crash made the page replace) to
/// stop waiting on it: their waits for chunks end at once, as if the helpers had lost
/// them.
pub fn abandon(buffer: &SharedArrayBuffer) {
    if let Some(s) = Shared::new(buffer.clone()) {
        s.store(GONE, 1);
        for c in 0..MAX_JOB_CHUNKS as u32 {
            s.wake(DONE + c);
        }
    }
}

/// What the pool's sharing has done so far (the page's view of `buffer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitCounts {
    /// Products drivers shared.
    pub offers: u32,
    /// Chunks of rows the helpers computed for them.
    pub chunks: u32,
    /// Microseconds the drivers waited for the helpers' chunks (wrapping).
    pub waited_us: u32,
    /// Of the products shared, those of batches of several sequences a driver kept.
    pub batch_offers: u32,
}

/// [`SplitCounts`] of `buffer`.
pub fn counts(buffer: &SharedArrayBuffer) -> Option<SplitCounts> {
    Shared::new(buffer.clone()).map(|s| SplitCounts {
        offers: s.load(OFFERS) as u32,
        chunks: s.load(HELPED) as u32,
        waited_us: s.load(WAITED_US) as u32,
        batch_offers: s.load(BATCH_OFFERS) as u32,
    })
}

/// The buffer seen from one worker.
#[derive(Clone)]
struct Shared {
    ctl: Int32Array,
    buffer: SharedArrayBuffer,
}

impl Shared {
    fn new(buffer: SharedArrayBuffer) -> Option<Self> {
        (buffer.byte_length() == BYTES).then(|| Shared {
            ctl: Int32Array::new_with_byte_offset_and_length(&buffer, 0, CONTROL),
            buffer,
        })
    }
    fn load(&self, i: u32) -> i32 {
        atomics::load(&self.ctl, i)
    }
    fn store(&self, i: u32, v: i32) {
        atomics::store(&self.ctl, i, v);
    }
    fn add(&self, i: u32, v: i32) -> i32 {
        atomics::add(&self.ctl, i, v)
    }
    fn cas(&self, i: u32, expected: i32, to: i32) -> bool {
        atomics::compare_exchange(&self.ctl, i, expected, to) == expected
    }
    fn wake(&self, i: u32) {
        atomics::notify(&self.ctl, i);
    }
    /// Watches word `i` while it holds `v`, at most `ms` (without sleeping): whether it
    /// changed.
    fn spin(&self, i: u32, v: i32, ms: f64) -> bool {
        let until = crate::clock::now_ms() + ms;
        loop {
            if (0..256).any(|_| self.load(i) != v) {
                return true;
            }
            if crate::clock::now_ms() > until {
                return false;
            }
        }
    }
    /// Waits while word `i` holds `v`, at most `ms`.
    fn wait(&self, i: u32, v: i32, ms: f64) {
        let _ = Atomics::wait_with_timeout(&self.ctl, i, v, ms);
    }
    fn floats(&self, at: u32, len: usize) -> Float32Array {
        Float32Array::new_with_byte_offset_and_length(&self.buffer, at, len as u32)
    }
    /// Claims the next chunk of the job of `epoch` (of `total`), if any is left.
    fn claim(&self, epoch: i32, total: usize) -> Option<usize> {
        let tag = (epoch & 0xFFFF) << 16;
        loop {
            let w = self.load(CLAIM);
            let next = (w & 0xFFFF) as usize;
            if w & !0xFFFF != tag || next >= total {
                return None;
            }
            if self.cas(CLAIM, w, w + 1) {
                return Some(next);
            }
        }
    }
    /// Takes chunk `c` of the job of `epoch` (fixed shares), unless someone has.
    fn take(&self, c: usize, epoch: i32) -> bool {
        let w = self.load(CLAIMS + c as u32);
        w != epoch && self.cas(CLAIMS + c as u32, w, epoch)
    }
    fn job(&self) -> SplitJob {
        let words: [u32; JOB_WORDS] = std::array::from_fn(|k| self.load(JOB + k as u32) as u32);
        SplitJob::from_words(&words)
    }
}

thread_local! {
    static SHARED: RefCell<Option<Shared>> = const { RefCell::new(None) };
    /// Whether this worker's products are offered to helpers: it has the buffer and no
    /// helper has lost a chunk.
    static OFFERING: Cell<bool> = const { Cell::new(false) };
    /// Whether this worker is computing a batch of several sequences it kept.
    static IN_BATCH: Cell<bool> = const { Cell::new(false) };
    /// The last invitation sent before this worker last entered the helper loop.
    static SERVED: Cell<Option<i32>> = const { Cell::new(None) };
    /// Where this worker leads a pool that splits the model by rows: how many shares.
    static SHARES: Cell<usize> = const { Cell::new(0) };
}

/// A file of nothing (the rows of a worker without weights: every chunk refused).
static NO_FILE: Vec<u8> = Vec::new();

/// Whether a batch of `batch` sequences over a `vocab`-token vocabulary is best computed
/// here with its products' rows shared ([`RowHelpers`]) rather than its sequences split
/// between the workers (`peers.rs`): where this worker offers its products and the batch's
/// largest results (the output layer's) fit the buffer. Larger batches per product cost
/// less per sequence, and the split by rows needs no peer to hold the sequences' caches:
/// measured in the page, SMC's first results came 11–29% sooner than with its 8 particles
/// split 4 and 4, XML's even (`docs/bench/page.md`). A kept batch whose round runs more
/// than 64 tokens of SmolLM2's widest input (`X_CAP`: a batch of long new runs, rare
/// since each sequence's prefix is cached) is computed here alone.
pub fn keeps_batch(batch: usize, vocab: usize) -> bool {
    // A lead of shares keeps every batch: its peers hold no model to compute sequences.
    OFFERING.with(Cell::get) && (SHARES.with(Cell::get) > 0 || batch * vocab <= OUT_CAP)
}

/// Marks the products offered until it drops as a kept batch's ([`SplitCounts::batch_offers`]).
pub struct KeptBatch {
    outer: bool,
}

impl KeptBatch {
    /// Enters a kept batch of `batch` sequences (a batch of one is not counted).
    pub fn enter(batch: usize) -> Self {
        let outer = IN_BATCH.with(|b| b.replace(batch > 1));
        KeptBatch { outer }
    }
}

impl Drop for KeptBatch {
    fn drop(&mut self) {
        IN_BATCH.with(|b| b.set(self.outer));
    }
}

/// What the driver's side needs of its worker: whether it drives a job (only a driver
/// invites), and how to invite its peers.
pub struct DriverView {
    /// Whether this worker has a job of its own under way.
    pub busy: fn() -> bool,
    /// Sends `PeerMessage::Assist` to every peer, stamped with the buffer's leave count
    /// and the invitation's number.
    pub invite: fn(i32, i32),
}

/// This worker's buffer (`ToWorker::Split`): installs the model's helpers for its products
/// (`shares`: 0 where every worker holds the whole model, else the shares of a model split
/// by rows, this worker being the lead).
pub fn install(
    buffer: SharedArrayBuffer,
    engine: Rc<Engine>,
    driver: &'static DriverView,
    shares: usize,
) {
    let Some(shared) = Shared::new(buffer) else {
        web_sys::console::error_1(&"worker: a split buffer of the wrong size".into());
        return;
    };
    SHARED.with(|s| *s.borrow_mut() = Some(shared.clone()));
    OFFERING.with(|o| o.set(true));
    SHARES.with(|s| s.set(shares));
    // A new buffer (one replaced after a crash) numbers its invitations from zero.
    SERVED.with(|v| v.set(None));
    let helpers = SabHelpers {
        shared,
        engine,
        driver,
        shares,
        order: RefCell::new(Vec::new()),
        next: Cell::new(0),
        epoch: Cell::new(0),
        chunks: Cell::new(0),
        mine: RefCell::new(Vec::new()),
        invited_at: Cell::new(f64::NEG_INFINITY),
    };
    lm::forward::split::set_helpers(Some(Rc::new(helpers)));
}

/// Sends the helpers out of their loop (they answer peers' messages only outside it).
pub fn leave() {
    SHARED.with(|s| {
        if let Some(s) = &*s.borrow() {
            s.add(LEAVE, 1);
            s.wake(EPOCH);
        }
    });
}

/// The driver's side of the buffer.
struct SabHelpers {
    shared: Shared,
    engine: Rc<Engine>,
    driver: &'static DriverView,
    /// 0, or the shares of a model split by rows (this worker the lead).
    shares: usize,
    /// Fixed shares: the chunks the lead tries, in order, and how many it has tried.
    order: RefCell<Vec<usize>>,
    next: Cell<usize>,
    /// The epoch of the job under way.
    epoch: Cell<i32>,
    /// Its chunks.
    chunks: Cell<usize>,
    /// The chunks this worker claimed for itself.
    mine: RefCell<Vec<usize>>,
    invited_at: Cell<f64>,
}

impl RowHelpers for SabHelpers {
    fn model(&self) -> &dyn FileRows {
        // A worker's engine holds its weights; an empty file would make every chunk refused.
        self.engine.file_rows().unwrap_or(&NO_FILE)
    }

    fn shards(&self) -> usize {
        self.shares
    }

    fn capacity(&self) -> Option<(usize, usize)> {
        Some((X_CAP, OUT_CAP))
    }

    fn offer(&self, job: &SplitJob, x: &[f32]) -> bool {
        let s = &self.shared;
        let out = job.n * job.rows;
        let most = if self.shares > 0 {
            MAX_JOB_CHUNKS
        } else {
            MAX_CHUNKS
        };
        if !OFFERING.with(Cell::get)
            || x.len() > X_CAP
            || out > OUT_CAP
            || job.chunks() > most
            || s.load(GONE) != 0
        {
            return false;
        }
        // The shares' holders always listen (`serve`): no invitation.
        if self.shares == 0 && s.load(LISTENING) <= 0 {
            let now = crate::clock::now_ms();
            if (self.driver.busy)() && now - self.invited_at.get() > INVITE_EVERY_MS {
                self.invited_at.set(now);
                let invite = s.add(INVITES, 1).wrapping_add(1);
                (self.driver.invite)(s.load(LEAVE), invite);
            }
            return false;
        }
        if !s.cas(LOCK, 0, 1) {
            return false;
        }
        for (k, w) in job.to_words().into_iter().enumerate() {
            s.store(JOB + k as u32, w as i32);
        }
        s.floats(X_AT, x.len()).copy_from(x);
        let epoch = s.load(EPOCH).wrapping_add(1);
        s.store(CLAIM, (epoch & 0xFFFF) << 16);
        s.store(EPOCH, epoch);
        s.wake(EPOCH);
        s.add(OFFERS, 1);
        if IN_BATCH.with(Cell::get) {
            s.add(BATCH_OFFERS, 1);
        }
        self.epoch.set(epoch);
        self.chunks.set(job.chunks());
        *self.order.borrow_mut() = job.order_for(0);
        self.next.set(0);
        self.mine.borrow_mut().clear();
        true
    }

    fn claim(&self) -> Option<usize> {
        let c = if self.shares > 0 {
            // The chunks in the lead's order (its own, then the helpers'), those no helper
            // has taken.
            let order = self.order.borrow();
            loop {
                let k = self.next.get();
                let c = *order.get(k)?;
                self.next.set(k + 1);
                if self.shared.take(c, self.epoch.get()) {
                    break c;
                }
            }
        } else {
            self.shared.claim(self.epoch.get(), self.chunks.get())?
        };
        self.mine.borrow_mut().push(c);
        Some(c)
    }

    fn collect(&self, job: &SplitJob, got: &mut dyn FnMut(usize, &[f32])) -> Vec<usize> {
        let s = &self.shared;
        let epoch = self.epoch.get();
        let mine = std::mem::take(&mut *self.mine.borrow_mut());
        let started = crate::clock::now_ms();
        let deadline = started + LOST_MS;
        let mut lost = Vec::new();
        let mut part = Vec::new();
        let others = (0..job.chunks()).filter(|c| !mine.contains(c) && !job.rows_of(*c).is_empty());
        for c in others {
            loop {
                let done = s.load(DONE + c as u32);
                if done == epoch {
                    let rows = job.rows_of(c);
                    part.resize(job.n * rows.len(), 0.0);
                    s.floats(OUT_AT + (job.n * rows.start * 4) as u32, part.len())
                        .copy_to(&mut part);
                    got(c, &part);
                    break;
                }
                let changed = if self.shares > 0 {
                    s.spin(DONE + c as u32, done, SHARE_SPIN_MS)
                } else {
                    (0..SPIN).any(|_| s.load(DONE + c as u32) != done)
                };
                if changed {
                    continue;
                }
                let left = deadline - crate::clock::now_ms();
                if left <= 0.0 || s.load(GONE) != 0 {
                    lost.push(c);
                    // Whole copies: the driver computes alone from now. Shares: the lead
                    // computes the lost chunks and keeps offering (its batches have no
                    // other taker; the pool replaces a crashed holder).
                    if self.shares == 0 {
                        OFFERING.with(|o| o.set(false));
                    }
                    break;
                }
                s.wait(DONE + c as u32, done, left.min(50.0));
            }
        }
        s.add(
            WAITED_US,
            ((crate::clock::now_ms() - started) * 1000.0) as i32,
        );
        s.store(LOCK, 0);
        if !lost.is_empty() && self.shares == 0 {
            web_sys::console::warn_1(
                &format!(
                    "worker: a helper lost {} chunks; computing alone from now",
                    lost.len()
                )
                .into(),
            );
        }
        lost
    }
}

/// An invitation (`PeerMessage::Assist` number `invite`, sent at leave count `leave_at`):
/// this idle worker helps with the products the pool's driver offers until none comes for
/// [`IDLE_MS`] or a driver says leave. Blocks the worker meanwhile (its messages wait).
/// Ignored: an invitation that a driver's leave has overtaken (the driver has since sent
/// this worker other work, a batch's part, which waits behind it), and one sent before
/// this worker last entered the loop. A driver invites every 20 ms while no helper
/// listens, so a worker busy with a job of its own for a second finds some fifty queued
/// when it is done; the first puts it in the loop for as long as a driver offers
/// products, and the rest would each hold it there [`IDLE_MS`] more for nothing while
/// its own next job waited behind them.
pub fn assist(engine: &Engine, leave_at: i32, invite: i32) {
    let Some(s) = SHARED.with(|s| s.borrow().clone()) else {
        return;
    };
    let stale = SERVED
        .with(Cell::get)
        .is_some_and(|v| invite.wrapping_sub(v) <= 0);
    if s.load(LEAVE) != leave_at || stale {
        return;
    }
    let model = engine.file_rows().unwrap_or(&NO_FILE);
    s.add(LISTENING, 1);
    // After listening is raised no driver invites, so every invitation up to this number
    // was sent before this stay began.
    SERVED.with(|v| v.set(Some(s.load(INVITES))));
    let mut seen = s.load(EPOCH);
    let (mut x, mut part) = (Vec::new(), Vec::new());
    loop {
        // The driver's next product follows within microseconds (a norm, a few heads of
        // attention): watch for it a while before sleeping, whose wake-up would cost a
        // good part of a product.
        for _ in 0..SPIN {
            if s.load(EPOCH) != seen || s.load(LEAVE) != leave_at {
                break;
            }
        }
        s.wait(EPOCH, seen, IDLE_MS);
        let epoch = s.load(EPOCH);
        if s.load(LEAVE) != leave_at || epoch == seen {
            break;
        }
        seen = epoch;
        let job = s.job();
        if job.n * job.cols > X_CAP || job.n * job.rows > OUT_CAP {
            continue;
        }
        x.resize(job.n * job.cols, 0.0);
        s.floats(X_AT, x.len()).copy_to(&mut x);
        while let Some(c) = s.claim(epoch, job.chunks()) {
            let rows = job.rows_of(c);
            part.resize(job.n * rows.len(), 0.0);
            if let Err(e) = lm::forward::split::compute_chunk(model, &job, c, &x, &mut part) {
                // Not this worker's model: the driver computes the chunk when it gives up.
                web_sys::console::error_1(&format!("worker: {e}").into());
                s.add(LISTENING, -1);
                return;
            }
            s.floats(OUT_AT + (job.n * rows.start * 4) as u32, part.len())
                .copy_from(&part);
            s.store(DONE + c as u32, epoch);
            s.wake(DONE + c as u32);
            s.add(HELPED, 1);
        }
    }
    s.add(LISTENING, -1);
}

/// A share's holder in a pool that splits the model by rows (`ToWorker::Split` after
/// `LoadShare`): serves `buffer` for as long as it is this worker's, computing its share
/// of every product the lead offers, and turning to its messages every [`IDLE_MS`]
/// without a job (a new buffer after a crash, a crash asked for by a test).
pub fn serve(buffer: SharedArrayBuffer, share: Rc<ShardFile>) {
    let Some(s) = Shared::new(buffer) else {
        web_sys::console::error_1(&"worker: a split buffer of the wrong size".into());
        return;
    };
    SHARED.with(|sh| *sh.borrow_mut() = Some(s.clone()));
    wasm_bindgen_futures::spawn_local(async move {
        let current = || {
            SHARED.with(|sh| {
                sh.borrow()
                    .as_ref()
                    .is_some_and(|c| js_sys::Object::is(&c.buffer, &s.buffer))
            })
        };
        while current() {
            serve_a_while(&s, &share);
            crate::engine::yield_now().await;
        }
    });
}

/// [`serve`]'s stay in the loop: the current job's share if the lead is still waiting
/// for it, then each new job's, until [`IDLE_MS`] pass without one or [`STAY_MS`] in all.
fn serve_a_while(s: &Shared, share: &ShardFile) {
    let until = crate::clock::now_ms() + STAY_MS;
    let index = share.shard().index;
    let (mut x, mut part) = (Vec::new(), Vec::new());
    let mut compute = |epoch: i32| {
        let job = s.job();
        if job.shards != share.shard().of || job.n * job.cols > X_CAP || job.n * job.rows > OUT_CAP
        {
            return;
        }
        x.resize(job.n * job.cols, 0.0);
        s.floats(X_AT, x.len()).copy_to(&mut x);
        for c in job.order_for(index) {
            if !s.take(c, epoch) {
                continue; // taken by the lead, or by this worker before it read messages
            }
            let rows = job.rows_of(c);
            part.resize(job.n * rows.len(), 0.0);
            if let Err(e) = lm::forward::split::compute_chunk(share, &job, c, &x, &mut part) {
                // Not this share's job: the lead's pass fails when it gives up waiting.
                web_sys::console::error_1(&format!("worker: {e}").into());
                return;
            }
            if s.load(EPOCH) != epoch {
                return; // the lead gave up on this job: its buffer is the next one's
            }
            s.floats(OUT_AT + (job.n * rows.start * 4) as u32, part.len())
                .copy_from(&part);
            s.store(DONE + c as u32, epoch);
            s.wake(DONE + c as u32);
            s.add(HELPED, 1);
        }
    };
    let mut seen = s.load(EPOCH);
    if s.load(LOCK) != 0 {
        compute(seen); // offered while this worker read its messages
    }
    loop {
        if !s.spin(EPOCH, seen, HELPER_SPIN_MS) {
            s.wait(EPOCH, seen, IDLE_MS);
        }
        let epoch = s.load(EPOCH);
        if epoch == seen {
            return;
        }
        seen = epoch;
        compute(epoch);
        if crate::clock::now_ms() > until {
            return;
        }
    }
}
