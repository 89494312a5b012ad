//! The page's side of the sampling workers: starts a pool of them (`worker.js`, a module
//! worker that instantiates the page's own `WebAssembly.Module`), one after another, each
//! with a copy of the model's bytes; then sends each job (a run, an enumeration, a
//! generation) to the least busy ready worker, sends Stop, and applies the batches that
//! come back to the page's [`Run`]s. Compare mode's runs and the exact P^L thus sample in
//! parallel. While no worker is ready, or when every one has failed, the page samples on
//! its own thread as before.

use super::protocol::{FromWorker, ToWorker};
use crate::clock::shared_clock_ms;
use crate::engine::{Ended, Finished, Output, Request};
use crate::model_file::ModelFile;
use playground::runner::{Outcome, Run};
use playground::state::PlaygroundState;
use sampler_core::Event;
use sampler_core::exact::ExactDistribution;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// Where the sampling workers stand, for the page (`#pg-worker[data-state]`).
#[derive(Clone, Debug, PartialEq)]
pub enum WorkerState {
    /// Not started: the model is not loaded, runs on WebGPU, or `?worker=off`.
    Off(String),
    /// The first worker is starting, or loading its copy of the model.
    Loading,
    /// At least one worker is ready: real-model runs go to the pool.
    Ready {
        /// Milliseconds from starting the first worker to its model being loaded.
        ms: f64,
    },
    /// Every worker failed to start or died; runs go to the page's thread.
    Failed(String),
}

/// One worker of the pool as the page shows it (`.pool-worker[data-state]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member {
    /// Starting or loading its copy of the model.
    Loading,
    /// Ready, with no job.
    Idle,
    /// Ready, with this many jobs under way.
    Busy(usize),
    /// It failed to start or died.
    Failed,
}

impl Member {
    /// `loading`, `idle`, `busy` or `failed`.
    pub fn name(self) -> &'static str {
        match self {
            Member::Loading => "loading",
            Member::Idle => "idle",
            Member::Busy(_) => "busy",
            Member::Failed => "failed",
        }
    }
}

/// The pool as the page shows it: its planned size and why, and each started worker.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pool {
    /// Workers the page means to start (see `lm::page_memory::worker_pool_plan`).
    pub planned: usize,
    /// What decided that number.
    pub why: String,
    /// The workers started so far, in order.
    pub members: Vec<Member>,
    /// Sequences each of them computed for another worker's run (SMC particles).
    pub helped: Vec<u64>,
    /// Prefills idle workers have finished so far ([`warm`]).
    pub warmed: u64,
    /// Workers replaced after a crash since the pool started, and the last crash's cause.
    pub replaced: (u32, String),
    /// What sharing one sequence's products did (`split.rs`): products shared, chunks idle
    /// workers computed, the drivers' waits; `None` where the page is not cross-origin
    /// isolated (no sharing).
    pub split: Option<super::split::SplitCounts>,
    /// 0 where each worker holds a whole copy of the model; otherwise the shares it is
    /// split into by rows, one a worker (the first, the lead, runs every job).
    pub shares: usize,
}

impl WorkerState {
    /// `off`, `loading`, `ready` or `failed`.
    pub fn name(&self) -> &'static str {
        match self {
            WorkerState::Off(_) => "off",
            WorkerState::Loading => "loading",
            WorkerState::Ready { .. } => "ready",
            WorkerState::Failed(_) => "failed",
        }
    }
}

/// What the page measured of the worker's token-carrying messages (the cost of running
/// off-thread): playground batches (one per model call) and quick-form tokens (one each).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Overhead {
    /// Messages received (batches and tokens).
    pub messages: u64,
    /// Tokens they carried.
    pub tokens: u64,
    /// Sum over messages of the time from the worker's post to the page's handler.
    pub latency_ms: f64,
    /// Sum over messages of the page's time to decode and apply them.
    pub apply_ms: f64,
}

impl Overhead {
    /// Mean milliseconds from post to handler per message.
    pub fn mean_latency_ms(&self) -> f64 {
        self.latency_ms / self.messages.max(1) as f64
    }

    /// Mean milliseconds of the page's thread spent per message (decode + apply).
    pub fn mean_apply_ms(&self) -> f64 {
        self.apply_ms / self.messages.max(1) as f64
    }
}

struct Pending {
    run: Run,
    /// Resolves the future `drive` awaits.
    done: js_sys::Function,
}

/// An exact enumeration under way: what waits for its result, and who hears its progress.
struct PendingExact {
    waiter: Waiter<ExactDistribution>,
    progress: Rc<dyn Fn(u64)>,
}

/// A quick-form generation under way: where its tokens go, and what waits for its result.
struct PendingGenerate {
    waiter: Waiter<Result<Finished, Ended>>,
    out: Box<dyn Output>,
}

/// What a job's future waits for: the slot its result goes to, and what wakes it.
struct Waiter<T> {
    done: js_sys::Function,
    result: Rc<RefCell<Option<Result<T, String>>>>,
}

impl<T> Waiter<T> {
    /// Hands the job its result and wakes its future.
    fn finish(self, result: Result<T, String>) {
        *self.result.borrow_mut() = Some(result);
        let _ = self.done.call0(&JsValue::NULL);
    }
}

/// One started worker of the pool.
pub struct SamplingWorker {
    worker: web_sys::Worker,
    /// Its place in the pool (how its peers name it).
    index: u32,
    /// Sequences it computed for its peers.
    helped: Cell<u64>,
    /// Whether its copy of the model is loaded (jobs go only to loaded workers).
    loaded: Cell<bool>,
    next_id: Cell<u64>,
    pending: RefCell<HashMap<u64, Pending>>,
    exacts: RefCell<HashMap<u64, PendingExact>>,
    generates: RefCell<HashMap<u64, PendingGenerate>>,
    /// Resolves what `start` awaits (Ready, then Loaded) with the message.
    waiting: RefCell<Option<js_sys::Function>>,
    overhead: Cell<Overhead>,
    dead: Cell<bool>,
    /// Of its jobs, the prefills under way ([`warm`]): the next job goes to it as if they
    /// were done, queued behind the prefill of (likely) its own prompt.
    warming: Cell<usize>,
    /// When it last started a prefill (the pool's count of prefills started): of workers
    /// equally free, the next job goes to the one that prefilled last.
    warmed_at: Cell<u64>,
    /// Where the pool splits the model by rows: which share it holds (0, the lead, runs
    /// the jobs; the others only compute their rows of the lead's products).
    share: Option<usize>,
}

/// What a worker is sent to load.
#[derive(Clone)]
enum Load {
    /// The whole file.
    Whole,
    /// Share `index` of `of`: these byte ranges of the file.
    Share {
        index: usize,
        of: usize,
        ranges: Vec<(u64, u64)>,
    },
}

thread_local! {
    /// The workers started for the current model, in order.
    static POOL: RefCell<Vec<Rc<SamplingWorker>>> = const { RefCell::new(Vec::new()) };
    /// The planned size and why.
    static PLAN: RefCell<(usize, String)> = const { RefCell::new((0, String::new())) };
    /// Prefills idle workers have finished ([`warm`]).
    static WARMED: Cell<u64> = const { Cell::new(0) };
    /// Prefills started.
    static WARM_STARTS: Cell<u64> = const { Cell::new(0) };
    /// Counts starts and stops, so a start that was overtaken does not set the state.
    static STARTS: Cell<u64> = const { Cell::new(0) };
    /// The next worker's index (unique while the page lives: peers name each other by it).
    static NEXT_INDEX: Cell<u32> = const { Cell::new(0) };
    /// The pool's buffer for sharing one sequence's products (`split.rs`), where the page
    /// is cross-origin isolated.
    static SPLIT: RefCell<Option<js_sys::SharedArrayBuffer>> = const { RefCell::new(None) };
    /// Where the pool splits the model by rows: each share's byte ranges of the file (what
    /// a replacement loads); empty where each worker holds a whole copy.
    static SHARES: RefCell<Vec<Vec<(u64, u64)>>> = const { RefCell::new(Vec::new()) };
    /// Whether the pool is still unsettled: from page load until the model has loaded and
    /// [`start`] has loaded every worker it plans (or failed, or [`stop`] decided there is
    /// none). A run asked for meanwhile waits for it ([`settled`]).
    static SETTLING: Cell<bool> = const { Cell::new(true) };
    /// Workers replaced after a crash since the pool started, and the last crash's cause.
    static REPLACED: RefCell<(u32, String)> = const { RefCell::new((0, String::new())) };
    static STATE: RefCell<WorkerState> =
        RefCell::new(WorkerState::Off("the model is not loaded yet".into()));
}

/// Where the worker stands.
pub fn state() -> WorkerState {
    STATE.with(|s| s.borrow().clone())
}

fn set_state(s: WorkerState) {
    STATE.with(|st| *st.borrow_mut() = s);
}

/// The pool's workers that have loaded the model and not died.
fn live() -> Vec<Rc<SamplingWorker>> {
    POOL.with(|p| {
        p.borrow()
            .iter()
            .filter(|w| w.loaded.get() && !w.dead.get())
            .cloned()
            .collect()
    })
}

/// Of [`live`], those that run jobs: every one, or where the model is split by rows the
/// lead alone.
fn runners() -> Vec<Rc<SamplingWorker>> {
    live()
        .into_iter()
        .filter(|w| w.share.is_none_or(|i| i == 0))
        .collect()
}

/// The ready worker with the fewest jobs under way, a prefill not counted (of those tied,
/// the one that prefilled last, then the first), to which the next job goes; `None` while
/// no worker is ready. A Run pressed while its prompt is being prefilled thus waits for
/// that prefill and starts from its cache, instead of going to the worker that is
/// helping it and prefilling again from nothing.
pub fn ready() -> Option<Rc<SamplingWorker>> {
    if !matches!(state(), WorkerState::Ready { .. }) {
        return None;
    }
    runners().into_iter().min_by_key(|w| {
        (
            w.jobs().saturating_sub(w.warming.get()),
            std::cmp::Reverse(w.warmed_at.get()),
        )
    })
}

/// Conditions the idle workers' models on `state`'s prompt by a one-token `lm` run (its
/// sample dropped): the workers keep their KV caches from run to run, so a run of that
/// prompt that comes next skips the prompt's prefill (about 2 s in wasm for a chat
/// prompt; `e2e/lessons.test.mjs` prints a step's time to its first token): the worker the next
/// job goes to where products are shared, every idle one otherwise. A lesson warms its next
/// real-model step while the reader reads the current one.
/// While the pool is still starting, it waits for it (up to 30 s).
pub fn warm(setup: &PlaygroundState) {
    let setup = setup.clone();
    wasm_bindgen_futures::spawn_local(async move {
        for _ in 0..120 {
            if matches!(state(), WorkerState::Ready { .. }) {
                return warm_idle(&setup);
            }
            sleep_ms(250).await;
        }
    });
}

/// Conditions the pool's workers on `setup`'s prompt as [`warm`] does, now, and only
/// where the whole pool is idle (a run under way keeps its idle workers as its helpers):
/// the playground's form calls it when a real-model prompt settles in it while nothing
/// runs, so the Run that follows skips the prompt's prefill. Whether it started.
pub fn warm_if_idle(setup: &PlaygroundState) -> bool {
    let pool = live();
    let idle = matches!(state(), WorkerState::Ready { .. }) && pool.iter().all(|w| w.jobs() == 0);
    if idle {
        warm_idle(setup);
    }
    idle
}

fn warm_idle(setup: &PlaygroundState) {
    let mut idle: Vec<_> = runners().into_iter().filter(|w| w.jobs() == 0).collect();
    // Where products are shared, only the worker the next job goes to ([`ready`]: the
    // first idle one) needs the prompt, and the others help it prefill, row by row:
    // sooner than each prefilling alone. Without sharing, a run's batches are split by
    // sequence, and every peer conditions its copy on the prompt.
    if SPLIT.with(|s| s.borrow().is_some()) {
        idle.truncate(1);
    }
    let params = sampler_core::samplers::Params {
        n: 1,
        max_tokens: 1,
        ..setup.params()
    };
    for w in idle {
        let run = Run::new(
            sampler_core::samplers::Method::Lm,
            params.clone(),
            setup.seed,
        );
        let setup = setup.clone();
        let started = WARM_STARTS.with(|n| {
            n.set(n.get() + 1);
            n.get()
        });
        w.warmed_at.set(started);
        w.warming.set(w.warming.get() + 1);
        wasm_bindgen_futures::spawn_local(async move {
            w.drive(&run, &setup).await;
            w.warming.set(w.warming.get() - 1);
            WARMED.with(|n| n.set(n.get() + 1));
        });
    }
}

/// The pool as the page shows it.
pub fn pool() -> Pool {
    let (planned, why) = PLAN.with(|p| p.borrow().clone());
    let members = POOL.with(|p| {
        p.borrow()
            .iter()
            .map(|w| match (w.dead.get(), w.loaded.get(), w.jobs()) {
                (true, _, _) => Member::Failed,
                (false, false, _) => Member::Loading,
                (false, true, 0) => Member::Idle,
                (false, true, n) => Member::Busy(n),
            })
            .collect()
    });
    let helped = POOL.with(|p| p.borrow().iter().map(|w| w.helped.get()).collect());
    Pool {
        planned,
        why,
        members,
        helped,
        warmed: WARMED.with(Cell::get),
        replaced: REPLACED.with(|r| r.borrow().clone()),
        split: SPLIT.with(|s| s.borrow().as_ref().and_then(super::split::counts)),
        shares: SHARES.with(|s| s.borrow().len()),
    }
}

/// The message overhead measured so far, over every worker (zero without one).
pub fn overhead() -> Overhead {
    POOL.with(|p| {
        p.borrow().iter().fold(Overhead::default(), |a, w| {
            let o = w.overhead.get();
            Overhead {
                messages: a.messages + o.messages,
                tokens: a.tokens + o.tokens,
                latency_ms: a.latency_ms + o.latency_ms,
                apply_ms: a.apply_ms + o.apply_ms,
            }
        })
    })
}

/// Ends every worker (a new model is coming, or the page samples on WebGPU).
pub fn stop(why: &str) {
    STARTS.with(|n| n.set(n.get() + 1));
    let workers = POOL.with(|p| std::mem::take(&mut *p.borrow_mut()));
    for w in workers {
        w.die(why);
    }
    PLAN.with(|p| *p.borrow_mut() = (0, String::new()));
    SHARES.with(|s| s.borrow_mut().clear());
    REPLACED.with(|r| *r.borrow_mut() = (0, String::new()));
    set_state(WorkerState::Off(why.into()));
    SETTLING.with(|s| s.set(false));
}

/// Waits while the pool is unsettled (the model loading, its workers starting), up to 30 s
/// or until `stop()`: a run asked for as the page opens (a link's, a lesson's) then starts
/// on the workers, every one of them loaded and sharing the products, instead of on the
/// page's thread, where it would stay to its end.
pub async fn settled(stop: &dyn Fn() -> bool) {
    for _ in 0..600 {
        if !SETTLING.with(|s| s.get()) || stop() {
            return;
        }
        sleep_ms(50).await;
    }
}

/// A promise and the function that resolves it.
fn promise() -> (js_sys::Promise, js_sys::Function) {
    let mut resolve = None;
    let p = js_sys::Promise::new(&mut |r, _| resolve = Some(r));
    (p, resolve.expect("the executor runs at once"))
}

/// Starts the pool of `plan.workers` workers, one after another (so the first is ready
/// soonest and the copies are not all made at once), each with a copy of `model`'s bytes;
/// resolves when the last has loaded them or one has failed (the state and [`pool`] say
/// how that went). Runs asked for meanwhile wait for it ([`settled`]); where it fails, they
/// run on the page's thread or on the workers that did load.
pub async fn start(file: ModelFile, plan: lm::page_memory::PoolPlan) {
    stop("replaced");
    let this_start = STARTS.with(|n| n.get());
    SETTLING.with(|s| s.set(true));
    load_pool(&file, plan, this_start).await;
    if STARTS.with(|n| n.get()) == this_start {
        SETTLING.with(|s| s.set(false));
    }
}

/// [`start`]'s loading of the workers, one after another.
async fn load_pool(file: &ModelFile, plan: lm::page_memory::PoolPlan, this_start: u64) {
    SPLIT.with(|s| *s.borrow_mut() = super::split::create());
    // Shares where the plan has them (two or more workers, and one copy split between them
    // fits) or where asked (`?pool=shares`); copies where asked (`?pool=copies`), where
    // shares cannot be (no split buffer, a model of other types), and with one worker.
    let want_shares = match (crate::page_state::pool_choice(), &plan.shares) {
        (Some(choice), _) => choice,
        (None, shares) => shares.is_some(),
    };
    let (share_workers, share_why) = plan
        .shares
        .clone()
        .unwrap_or_else(|| (plan.workers, plan.why.clone()));
    let shares = if want_shares {
        share_plans(share_workers)
    } else {
        Vec::new()
    };
    let (workers, why) = if shares.is_empty() {
        (plan.workers, plan.why)
    } else {
        (share_workers, share_why)
    };
    PLAN.with(|p| *p.borrow_mut() = (workers, why));
    SHARES.with(|s| *s.borrow_mut() = shares.clone());
    set_state(WorkerState::Loading);
    let t0 = crate::clock::now_ms();
    for i in 0..workers {
        let load = load_for(i);
        let result = start_one(file, load).await;
        if STARTS.with(|n| n.get()) != this_start {
            // A new model (or `stop`) came while this one loaded: the state is theirs.
            return;
        }
        match result {
            Ok(w) => {
                w.loaded.set(true);
                link_peers(&w);
                share_split(&w);
                // Shares: ready when every share is (the lead cannot run without them).
                let whole = shares.is_empty() || i + 1 == workers;
                if whole && !matches!(state(), WorkerState::Ready { .. }) {
                    set_state(WorkerState::Ready {
                        ms: crate::clock::now_ms() - t0,
                    });
                }
            }
            Err(e) if !shares.is_empty() => {
                // A share missing: the others cannot run the model; the page's thread does.
                for w in POOL.with(|p| std::mem::take(&mut *p.borrow_mut())) {
                    w.die(&e);
                }
                set_state(WorkerState::Failed(e));
                return;
            }
            Err(e) => {
                // The ones ready so far keep working; no further worker is started.
                let last = POOL.with(|p| p.borrow().last().cloned());
                if let Some(w) = last.filter(|w| !w.loaded.get()) {
                    w.die(&e);
                }
                if !matches!(state(), WorkerState::Ready { .. }) {
                    set_state(WorkerState::Failed(e));
                }
                return;
            }
        }
    }
}

/// Where a pool of `workers` can split the model by rows (at least two workers, a split
/// buffer, and matrices the workers can split): each share's byte ranges of the file,
/// planned from the page's header; empty otherwise (each worker gets the whole file), the
/// console saying why where the model is the reason.
fn share_plans(workers: usize) -> Vec<Vec<(u64, u64)>> {
    let wanted = workers >= 2 && SPLIT.with(|s| s.borrow().is_some());
    let Some(engine) = crate::page_state::engine().filter(|_| wanted) else {
        return Vec::new();
    };
    let plans = (0..workers)
        .map(|index| {
            let shard = lm::shard::Shard { index, of: workers };
            lm::shard::ShardFile::plan(engine.gguf(), shard)
                .map(|r| r.iter().map(|r| (r.start as u64, r.end as u64)).collect())
        })
        .collect::<Result<Vec<_>, _>>();
    plans.unwrap_or_else(|e| {
        let why = format!("each sampling worker gets the whole model: {e}");
        web_sys::console::warn_1(&why.into());
        Vec::new()
    })
}

/// What worker `i` of the pool loads: its share where the model is split, else the file.
fn load_for(i: usize) -> Load {
    SHARES.with(|s| {
        let s = s.borrow();
        match s.get(i) {
            Some(ranges) => Load::Share {
                index: i,
                of: s.len(),
                ranges: ranges.clone(),
            },
            None => Load::Whole,
        }
    })
}

/// Hands `w` the pool's split buffer, if there is one.
fn share_split(w: &SamplingWorker) {
    let Some(buffer) = SPLIT.with(|s| s.borrow().clone()) else {
        return;
    };
    let sent = super::protocol::to_js(&ToWorker::Split { buffer })
        .and_then(|msg| w.worker.post_message(&msg).map_err(|e| js_error(&e)));
    if let Err(e) = sent {
        web_sys::console::error_1(&format!("cannot share the split buffer: {e}").into());
    }
}

/// Links the newly loaded `w` with every other loaded worker by a `MessageChannel`, one
/// port to each (see `peers.rs`), so they can share a run's batched model calls.
fn link_peers(w: &SamplingWorker) {
    if w.share.is_some() {
        return; // a share's holder has no model to compute sequences with
    }
    let others: Vec<Rc<SamplingWorker>> =
        live().into_iter().filter(|o| o.index != w.index).collect();
    for o in others {
        let Ok(channel) = web_sys::MessageChannel::new() else {
            return;
        };
        for (to, port, peer) in [
            (&w.worker, channel.port1(), o.index),
            (&o.worker, channel.port2(), w.index),
        ] {
            let transfer = js_sys::Array::of1(&port);
            let sent =
                super::protocol::to_js(&ToWorker::Peer { index: peer, port }).and_then(|msg| {
                    to.post_message_with_transfer(&msg, &transfer)
                        .map_err(|e| js_error(&e))
                });
            if let Err(e) = sent {
                web_sys::console::error_1(&format!("cannot link two workers: {e}").into());
            }
        }
    }
}

/// Workers replaced after crashes, at most, before the pool is left as it is (a model
/// that crashes every worker would otherwise restart them forever).
const MAX_REPLACED: u32 = 3;

/// A worker crashed (its `error` event): its jobs end with a message, its peers are told,
/// and a new worker with its own copy of the model takes its place in the pool.
fn crashed(w: &Rc<SamplingWorker>, why: &str) {
    if w.dead.get() {
        return;
    }
    let replace = REPLACED.with(|r| r.borrow().0) < MAX_REPLACED;
    w.die(&format!(
        "a sampling worker stopped ({why}); what it was running ended with it{}",
        if replace {
            ", and a new worker takes its place"
        } else {
            ""
        }
    ));
    if !replace {
        return;
    }
    REPLACED.with(|r| {
        let mut r = r.borrow_mut();
        r.0 += 1;
        r.1 = why.to_string();
    });
    POOL.with(|p| p.borrow_mut().retain(|o| !Rc::ptr_eq(o, w)));
    // The crashed worker may have held the split buffer's lock or been counted as a
    // helper: the survivors get a fresh buffer (the new worker gets it once loaded), and
    // a driver waiting on the old one for the crashed worker's rows stops waiting.
    if let Some(old) = SPLIT.with(|s| s.borrow().clone()) {
        super::split::abandon(&old);
    }
    SPLIT.with(|s| *s.borrow_mut() = super::split::create());
    for o in &live() {
        share_split(o);
    }
    let this_start = STARTS.with(|n| n.get());
    let load = w.share.map_or(Load::Whole, load_for);
    wasm_bindgen_futures::spawn_local(async move {
        let Some(file) = crate::page_state::engine().and_then(|e| e.file().cloned()) else {
            return;
        };
        let result = start_one(&file, load).await;
        let overtaken = STARTS.with(|n| n.get()) != this_start;
        match result {
            Ok(w) if overtaken => w.die("replaced"),
            Ok(w) => {
                w.loaded.set(true);
                link_peers(&w);
                share_split(&w);
                if !matches!(state(), WorkerState::Ready { .. }) {
                    set_state(WorkerState::Ready { ms: 0.0 });
                }
            }
            Err(e) => {
                web_sys::console::error_1(&format!("the new sampling worker failed: {e}").into());
                let last = POOL.with(|p| p.borrow().last().cloned());
                if let Some(w) = last.filter(|w| !w.loaded.get()) {
                    w.die(&e);
                }
            }
        }
    });
}

/// `window.__straitCrashWorker()`: makes the busiest worker crash (a panic, which aborts
/// its module), so that tests can exercise a worker dying mid-run; with a number `i`
/// (`__straitCrashWorker(1)`), the worker holding share `i` of a model split by rows.
/// Returns whether there was such a worker.
pub fn expose_crash_hook() {
    use wasm_bindgen::closure::Closure;
    let Some(window) = web_sys::window() else {
        return;
    };
    let f = Closure::<dyn Fn(JsValue) -> bool>::new(|share: JsValue| {
        let target = match share.as_f64() {
            Some(i) => live().into_iter().find(|w| w.share == Some(i as usize)),
            None => live().into_iter().max_by_key(|w| w.jobs()),
        };
        target.is_some_and(|w| w.post(&ToWorker::Crash).is_ok())
    });
    let _ = js_sys::Reflect::set(
        &window,
        &"__straitCrashWorker".into(),
        f.as_ref().unchecked_ref(),
    );
    f.forget();
}

/// Starts one worker, adds it to the pool, and waits until it has loaded its copy of the
/// model (or its share of it).
async fn start_one(file: &ModelFile, load: Load) -> Result<Rc<SamplingWorker>, String> {
    let opts = web_sys::WorkerOptions::new();
    opts.set_type(web_sys::WorkerType::Module);
    let worker = web_sys::Worker::new_with_options("./worker.js", &opts)
        .map_err(|e| format!("the browser refused the worker: {}", js_error(&e)))?;
    let w = Rc::new(SamplingWorker {
        worker,
        index: NEXT_INDEX.with(|n| {
            let i = n.get();
            n.set(i + 1);
            i
        }),
        helped: Cell::new(0),
        warming: Cell::new(0),
        warmed_at: Cell::new(0),
        loaded: Cell::new(false),
        next_id: Cell::new(0),
        pending: RefCell::default(),
        exacts: RefCell::default(),
        generates: RefCell::default(),
        waiting: RefCell::default(),
        overhead: Cell::default(),
        dead: Cell::new(false),
        share: match &load {
            Load::Whole => None,
            Load::Share { index, .. } => Some(*index),
        },
    });
    let weak = Rc::downgrade(&w);
    let on_message =
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            if let Some(w) = weak.upgrade() {
                w.on_message(e.data());
            }
        });
    w.worker
        .set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    let weak = Rc::downgrade(&w);
    // A script that fails to load fires a plain `Event`; an uncaught error, an `ErrorEvent`.
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        let why = e
            .dyn_ref::<web_sys::ErrorEvent>()
            .and_then(|e| js_sys::Reflect::get(e, &"message".into()).ok())
            .and_then(|m| m.as_string())
            .unwrap_or_else(|| "its script (worker.js) could not be loaded".into());
        // Handled here: not reported again as the page's own uncaught error.
        e.prevent_default();
        if let Some(w) = weak.upgrade() {
            crashed(&w, &why);
        }
    });
    w.worker
        .set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_error.forget();
    POOL.with(|p| p.borrow_mut().push(w.clone()));

    // 1. The page's own module: the worker instantiates it and answers Ready.
    let init = js_sys::Object::new();
    js_sys::Reflect::set(&init, &"module".into(), &wasm_bindgen::module())
        .map_err(|e| js_error(&e))?;
    let answer = w.ask(&init, None).await?;
    if !matches!(answer, FromWorker::Ready) {
        return Err(format!("the worker answered {answer:?} instead of Ready"));
    }
    // 2. The model file read afresh (outside the page's wasm memory), its buffer
    // transferred (not copied again); or, for a share, the file itself (a `Blob`, which
    // posting does not copy), from which the worker reads its ranges.
    let answer = match load {
        Load::Whole => {
            let bytes = file.read_all().await?;
            let transfer = js_sys::Array::of1(&bytes.buffer());
            let load = super::protocol::to_js(&ToWorker::Load { bytes })?;
            w.ask(&load, Some(&transfer)).await?
        }
        Load::Share { index, of, ranges } => {
            let load = super::protocol::to_js(&ToWorker::LoadShare {
                file: file.blob().clone(),
                index: index as u32,
                of: of as u32,
                ranges,
            })?;
            w.ask(&load, None).await?
        }
    };
    match answer {
        FromWorker::Loaded { .. } => Ok(w),
        FromWorker::LoadFailed { message } => {
            Err(format!("the worker could not load the model: {message}"))
        }
        other => Err(format!("the worker answered {other:?} instead of Loaded")),
    }
}

/// Resolves after `ms` milliseconds (the page's `setTimeout`).
async fn sleep_ms(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = JsFuture::from(p).await;
}

fn js_error(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

impl SamplingWorker {
    /// Posts `msg` and waits for the worker's next start-up answer.
    async fn ask(
        &self,
        msg: &JsValue,
        transfer: Option<&js_sys::Array>,
    ) -> Result<FromWorker, String> {
        let (p, resolve) = promise();
        *self.waiting.borrow_mut() = Some(resolve);
        match transfer {
            Some(t) => self.worker.post_message_with_transfer(msg, t),
            None => self.worker.post_message(msg),
        }
        .map_err(|e| format!("cannot post to the worker: {}", js_error(&e)))?;
        let v = JsFuture::from(p).await.map_err(|e| js_error(&e))?;
        if self.dead.get() {
            return Err(v.as_string().unwrap_or_else(|| "the worker died".into()));
        }
        serde_wasm_bindgen::from_value(v).map_err(|e| format!("bad answer from the worker: {e}"))
    }

    fn post(&self, msg: &ToWorker) -> Result<(), String> {
        let v = super::protocol::to_js(msg)?;
        self.worker
            .post_message(&v)
            .map_err(|e| format!("cannot post to the worker: {}", js_error(&e)))
    }

    fn on_message(&self, data: JsValue) {
        let received = shared_clock_ms();
        let t0 = crate::clock::now_ms();
        let msg: FromWorker = match serde_wasm_bindgen::from_value(data.clone()) {
            Ok(m) => m,
            Err(e) => {
                // End the job it was about (if it says), rather than wait for it forever.
                let why = format!("a message from the sampling worker could not be read: {e}");
                web_sys::console::error_1(&why.clone().into());
                let id = js_sys::Reflect::get(&data, &"id".into())
                    .ok()
                    .and_then(|v| serde_wasm_bindgen::from_value::<u64>(v).ok());
                if let Some(id) = id {
                    self.fail_job(id, &why);
                }
                return;
            }
        };
        match msg {
            FromWorker::Ready | FromWorker::Loaded { .. } | FromWorker::LoadFailed { .. } => {
                if let Some(resolve) = self.waiting.borrow_mut().take() {
                    let _ = resolve.call1(&JsValue::NULL, &data);
                }
            }
            FromWorker::Batch { id, batch, sent_at } => {
                let tokens = batch
                    .events
                    .iter()
                    .filter(|e| matches!(e.event, Event::Token { .. }))
                    .count() as u64;
                if let Some(p) = self.pending.borrow().get(&id) {
                    p.run.apply_batch(batch);
                }
                self.count(tokens, received - sent_at, t0);
            }
            FromWorker::ExactProgress { id, lm_calls } => {
                let progress = self.exacts.borrow().get(&id).map(|p| p.progress.clone());
                if let Some(progress) = progress {
                    progress(lm_calls);
                }
            }
            FromWorker::Tokens {
                id,
                tokens,
                sent_at,
            } => {
                let n = tokens.len() as u64;
                if let Some(p) = self.generates.borrow_mut().get_mut(&id) {
                    for token in tokens {
                        p.out.token(token);
                    }
                }
                self.count(n, received - sent_at, t0);
            }
            FromWorker::Rejected { id } => {
                if let Some(p) = self.generates.borrow_mut().get_mut(&id) {
                    p.out.rejected();
                }
            }
            FromWorker::Unlikely { id, mass_bound } => {
                if let Some(p) = self.generates.borrow_mut().get_mut(&id) {
                    p.out.unlikely(mass_bound);
                }
            }
            FromWorker::Generated { id, result } => {
                let p = self.generates.borrow_mut().remove(&id);
                if let Some(p) = p {
                    p.waiter.finish(Ok(result));
                }
            }
            FromWorker::Exact { id, result } => {
                let p = self.exacts.borrow_mut().remove(&id);
                if let Some(p) = p {
                    p.waiter.finish(result);
                }
            }
            FromWorker::Helped { sequences } => {
                self.helped.set(self.helped.get() + sequences);
            }
            FromWorker::Done { id, outcome } => {
                if let Some(p) = self.pending.borrow_mut().remove(&id) {
                    p.run.finish_remote(outcome);
                    let _ = p.done.call0(&JsValue::NULL);
                }
            }
        }
    }

    /// Adds one message carrying `tokens` tokens, `latency_ms` after it was posted, handled
    /// since `t0` (`now_ms`), to the overhead figures.
    fn count(&self, tokens: u64, latency_ms: f64, t0: f64) {
        let mut o = self.overhead.get();
        o.messages += 1;
        o.tokens += tokens;
        o.latency_ms += latency_ms.max(0.0);
        o.apply_ms += crate::clock::now_ms() - t0;
        self.overhead.set(o);
    }

    /// Asks `stop` every 50 ms until `finished` says job `id` is over; once `stop` says so,
    /// tells the worker to stop the job.
    fn watch_stop(
        self: &Rc<Self>,
        id: u64,
        stop: Rc<dyn Fn() -> bool>,
        finished: Rc<dyn Fn() -> bool>,
    ) {
        let weak = Rc::downgrade(self);
        wasm_bindgen_futures::spawn_local(async move {
            while !finished() {
                sleep_ms(50).await;
                if !finished() && stop() {
                    if let Some(w) = weak.upgrade() {
                        let _ = w.post(&ToWorker::Stop { id });
                    }
                    return;
                }
            }
        });
    }

    /// Runs the quick form's `request` in the worker, its tokens going to `out` as they
    /// come; `stop` is asked every 50 ms.
    pub async fn generate(
        self: &Rc<Self>,
        request: &Request,
        out: Box<dyn Output>,
        stop: Rc<dyn Fn() -> bool>,
    ) -> Result<Finished, Ended> {
        let id = self.next_id();
        let msg = ToWorker::Generate {
            id,
            request: request.clone(),
        };
        self.await_job(id, &msg, stop, |waiter| {
            self.generates
                .borrow_mut()
                .insert(id, PendingGenerate { waiter, out });
        })
        .await
        // The worker's answer, or why none came (it died, the post failed).
        .unwrap_or_else(|why| Err(Ended::Failed(why)))
    }

    /// Registers job `id`'s waiter (`register`), posts `msg`, watches `stop` every 50 ms and
    /// waits for the job's result (a failed post is the result).
    async fn await_job<T: 'static>(
        self: &Rc<Self>,
        id: u64,
        msg: &ToWorker,
        stop: Rc<dyn Fn() -> bool>,
        register: impl FnOnce(Waiter<T>),
    ) -> Result<T, String> {
        let (p, done) = promise();
        let result = Rc::new(RefCell::new(None));
        register(Waiter {
            done,
            result: result.clone(),
        });
        match self.post(msg) {
            Ok(()) => {
                let watched = result.clone();
                self.watch_stop(id, stop, Rc::new(move || watched.borrow().is_some()));
            }
            Err(e) => self.fail_job(id, &e),
        }
        let _ = JsFuture::from(p).await;
        result
            .borrow_mut()
            .take()
            .unwrap_or_else(|| Err("the worker gave no answer".into()))
    }

    /// Ends job `id` (a run, an enumeration or a generation) with `why`.
    fn fail_job(&self, id: u64, why: &str) {
        let run = self.pending.borrow_mut().remove(&id);
        if let Some(p) = run {
            p.run.finish_remote(Outcome::Failed(why.into()));
            let _ = p.done.call0(&JsValue::NULL);
        }
        let exact = self.exacts.borrow_mut().remove(&id);
        if let Some(p) = exact {
            p.waiter.finish(Err(why.into()));
        }
        let generate = self.generates.borrow_mut().remove(&id);
        if let Some(p) = generate {
            p.waiter.finish(Err(why.into()));
        }
    }

    /// Jobs under way (runs, enumerations, generations).
    fn jobs(&self) -> usize {
        self.pending.borrow().len() + self.exacts.borrow().len() + self.generates.borrow().len()
    }

    /// Marks the worker dead and ends it: every job it had ends with `why`, start-up fails;
    /// when no other worker of the pool is alive and loaded, the page samples on its own
    /// thread from now on.
    fn die(&self, why: &str) {
        if self.dead.replace(true) {
            return;
        }
        self.worker.terminate();
        // Its peers compute what they asked of it themselves.
        let others = live();
        for o in &others {
            let _ = o.post(&ToWorker::PeerGone { index: self.index });
        }
        let others = !others.is_empty();
        if !others {
            set_state(WorkerState::Failed(why.into()));
        }
        if let Some(resolve) = self.waiting.borrow_mut().take() {
            let _ = resolve.call1(&JsValue::NULL, &why.into());
        }
        let ids: Vec<u64> = (self.pending.borrow().keys())
            .chain(self.exacts.borrow().keys())
            .chain(self.generates.borrow().keys())
            .copied()
            .collect();
        for id in ids {
            self.fail_job(id, why);
        }
    }

    fn next_id(&self) -> u64 {
        let id = self.next_id.get() + 1;
        self.next_id.set(id);
        id
    }

    /// Enumerates the exact P^L of `state`'s language in the worker; `progress` hears the
    /// model calls so far, `stop` is asked every 50 ms and, once it says so, the worker is
    /// told to stop.
    pub async fn exact(
        self: &Rc<Self>,
        state: &PlaygroundState,
        stop: Rc<dyn Fn() -> bool>,
        progress: Rc<dyn Fn(u64)>,
    ) -> Result<ExactDistribution, String> {
        let id = self.next_id();
        let msg = ToWorker::Exact {
            id,
            state: Box::new(state.clone()),
        };
        self.await_job(id, &msg, stop, |waiter| {
            self.exacts
                .borrow_mut()
                .insert(id, PendingExact { waiter, progress });
        })
        .await
    }

    /// Drives `run` in the worker with the grammar and prompt of `state`; resolves when the
    /// run has ended (its outcome is set). Stop on the run reaches the worker.
    pub async fn drive(self: &Rc<Self>, run: &Run, state: &PlaygroundState) {
        let id = self.next_id();
        let (p, done) = promise();
        self.pending.borrow_mut().insert(
            id,
            Pending {
                run: run.clone(),
                done,
            },
        );
        let sent = self.post(&ToWorker::Run {
            id,
            spec: run.spec(),
            state: Box::new(state.clone()),
        });
        if let Err(e) = sent {
            return self.fail_job(id, &e);
        }
        let weak = Rc::downgrade(self);
        run.on_cancel(move || {
            if let Some(w) = weak.upgrade() {
                let _ = w.post(&ToWorker::Stop { id });
            }
        });
        let _ = JsFuture::from(p).await;
    }
}
