//! Drives one sampler (any [`Method`]) on a language model and a constraint, records its
//! events in order, and lets the page replay them at a chosen speed or one at a time.
//!
//! [`crate::player::Player`] replays what a run recorded into the views.
//!
//! A [`Run`] is a cheap handle (shared, single-threaded): the page keeps one clone to read
//! the buffer and press Stop while another drives the sampler's future. Toy models never
//! wait, so [`Run::drive_ready`] runs them to the end at once; real models are driven by
//! awaiting [`Run::drive`] on the page's executor.

use sampler_core::hmm::{CpuHmm, HmmEngine};
use sampler_core::samplers::{Counters, Io, Method, Params, Sample, Sampler};
use sampler_core::{
    Constraint, Event, EventSink, LanguageModel, SampleError, SeededRng, Vocabulary,
};
mod remote;

pub use remote::{Batch, BatchReader, RunSpec};

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// Most events kept per run; past it only `SampleFinished` events are kept (and
/// [`Run::truncated`] says so), so memory stays bounded on long runs.
pub const MAX_EVENTS: usize = 400_000;

/// One recorded event, with the run's counters when it is a finished sample.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RecordedEvent {
    /// What the sampler reported.
    pub event: Event,
    /// For `SampleFinished`: the counters carried by the sample (cumulative for the run).
    pub counters: Option<Counters>,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Outcome {
    /// The sampler produced everything it was asked for.
    Completed(Counters),
    /// Stop was pressed.
    Cancelled,
    /// The run used up its budget of LM calls (compare mode).
    BudgetReached,
    /// The sampler failed; the message is one line.
    Failed(String),
}

/// Counters updated during the run (not only at samples), for live progress: what the
/// sampler's context publishes before and after every model call (`EventSink::progress`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveCounters {
    /// Next-token distributions asked of the model so far.
    pub lm_calls: u64,
    /// Tokens run through the network, as the model reports them.
    pub forward_tokens: u64,
    /// Constraint checks (a full mask counts the vocabulary size).
    pub constraint_checks: u64,
}

/// What Stop calls besides setting the flag (see [`Run::on_cancel`]).
type CancelHook = Box<dyn FnOnce()>;

#[derive(Default)]
struct Shared {
    started: bool,
    events: Vec<RecordedEvent>,
    samples: Vec<Sample>,
    truncated: bool,
    outcome: Option<Outcome>,
}

/// A sampler run: its settings, its event buffer, its Stop flag and live counters.
#[derive(Clone)]
pub struct Run {
    method: Method,
    params: Params,
    seed: u64,
    budget: Option<u64>,
    max_events: usize,
    shared: Rc<RefCell<Shared>>,
    cancel: Rc<Cell<bool>>,
    live: Rc<Cell<LiveCounters>>,
    /// Called once at the first Stop (see [`Run::on_cancel`]).
    on_cancel: Rc<RefCell<Vec<CancelHook>>>,
    /// Where P-GCD's HMM work runs (the CPU reference when `None`).
    hmm_engine: Option<Rc<dyn HmmEngine>>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("method", &self.method)
            .field("seed", &self.seed)
            .field("events", &self.len())
            .finish()
    }
}

struct RunSink {
    max_events: usize,
    shared: Rc<RefCell<Shared>>,
    cancel: Rc<Cell<bool>>,
    live: Rc<Cell<LiveCounters>>,
    budget: Option<u64>,
}

impl EventSink for RunSink {
    fn emit(&mut self, event: Event) {
        let mut s = self.shared.borrow_mut();
        if s.events.len() >= self.max_events && !matches!(event, Event::SampleFinished { .. }) {
            s.truncated = true;
            return;
        }
        s.events.push(RecordedEvent {
            event,
            counters: None,
        });
    }

    fn cancelled(&self) -> bool {
        self.cancel.get() || self.budget.is_some_and(|b| self.live.get().lm_calls >= b)
    }

    fn progress(&mut self, c: &Counters) {
        self.live.set(LiveCounters {
            lm_calls: c.lm_calls,
            forward_tokens: c.forward_tokens,
            constraint_checks: c.constraint_checks,
        });
    }
}

impl Run {
    /// A run of `method` with `params`, its random choices seeded by `seed`.
    pub fn new(method: Method, mut params: Params, seed: u64) -> Self {
        // The chain view draws MCMC's chains one after another, so the page runs them so;
        // batch B stays what the rejection samplers read.
        if method.is_mcmc() {
            params.batch = 1;
        }
        Run {
            method,
            params,
            seed,
            budget: None,
            max_events: MAX_EVENTS,
            shared: Rc::default(),
            cancel: Rc::default(),
            live: Rc::default(),
            on_cancel: Rc::default(),
            hmm_engine: None,
        }
    }

    /// Runs P-GCD's HMM work (EM steps, guide table) on `engine` (the page's worker hands
    /// it burn's).
    pub fn with_hmm_engine(mut self, engine: Rc<dyn HmmEngine>) -> Self {
        self.hmm_engine = Some(engine);
        self
    }

    /// The run a playground state asks for (its method, parameters and seed).
    pub fn from_state(state: &crate::state::PlaygroundState) -> Result<Self, String> {
        state.validate()?;
        Ok(Run::new(state.method()?, state.params(), state.seed))
    }

    /// Compare mode: one run per method of `state.compare`, each with the state's seed and
    /// parameters but `n` at its cap, so that the equal budget of `state.budget` LM calls
    /// is what ends each run.
    pub fn compare_from_state(state: &crate::state::PlaygroundState) -> Result<Vec<Run>, String> {
        state.validate()?;
        if state.compare.is_empty() {
            return Err("compare mode needs at least one method".into());
        }
        let params = Params {
            n: crate::state::caps::N,
            ..state.params()
        };
        state.compare_methods().map(|ms| {
            ms.into_iter()
                .map(|m| Run::new(m, params.clone(), state.seed).with_lm_call_budget(state.budget))
                .collect()
        })
    }

    /// Stops the run once it has made `lm_calls` model calls (compare mode's equal budget);
    /// the samples so far are kept and the outcome is [`Outcome::BudgetReached`]. The
    /// check comes before each call, so a batched SMC step may overshoot by fewer than M
    /// calls; samplers that cache P(·|u) in their trie (ASAp, CARS on small vocabularies)
    /// may finish all `n` samples within the budget.
    pub fn with_lm_call_budget(mut self, lm_calls: u64) -> Self {
        self.budget = Some(lm_calls);
        self
    }

    /// Keeps at most `n` events besides `SampleFinished` (default [`MAX_EVENTS`]).
    pub fn with_max_events(mut self, n: usize) -> Self {
        self.max_events = n;
        self
    }

    /// The sampler.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Runs the sampler to its end, recording every event; resolves to how it ended.
    /// Stop ([`Run::cancel`]) takes effect at the sampler's next model call. A run is
    /// driven once; driving it again fails without touching its buffer.
    pub async fn drive<L: LanguageModel, C: Constraint>(
        &self,
        lm: &mut L,
        constraint: &C,
        vocab: Option<&Vocabulary>,
    ) -> Outcome {
        if std::mem::replace(&mut self.shared.borrow_mut().started, true) {
            return Outcome::Failed("this run was already driven; make a new one".into());
        }
        let mut sink = RunSink {
            max_events: self.max_events,
            shared: self.shared.clone(),
            cancel: self.cancel.clone(),
            live: self.live.clone(),
            budget: self.budget,
        };
        let shared = self.shared.clone();
        let mut out = |s: &Sample| {
            let mut sh = shared.borrow_mut();
            if let Some(last) = sh.events.last_mut()
                && matches!(last.event, Event::SampleFinished { .. })
                && last.counters.is_none()
            {
                last.counters = Some(s.counters);
            }
            sh.samples.push(s.clone());
        };
        let mut rng = SeededRng::new(self.seed);
        let result = Sampler::new(self.method)
            .params(&self.params)
            .vocabulary(vocab)
            .hmm_engine(self.hmm_engine.as_deref().unwrap_or(&CpuHmm))
            .run(
                lm,
                constraint,
                Io {
                    rng: &mut rng,
                    sink: &mut sink,
                    out: &mut out,
                },
            )
            .await;
        let outcome = match result {
            Ok(c) => Outcome::Completed(c),
            Err(SampleError::Cancelled) if self.cancel.get() => Outcome::Cancelled,
            Err(SampleError::Cancelled) => Outcome::BudgetReached,
            Err(e) => Outcome::Failed(e.to_string().lines().next().unwrap_or("").to_string()),
        };
        self.shared.borrow_mut().outcome = Some(outcome.clone());
        outcome
    }

    /// Drives the run with a model that never waits (the toy models): the whole run
    /// happens now. A model that does wait makes this fail with a message instead.
    pub fn drive_ready<L: LanguageModel, C: Constraint>(
        &self,
        lm: &mut L,
        constraint: &C,
        vocab: Option<&Vocabulary>,
    ) -> Outcome {
        match poll_once(self.drive(lm, constraint, vocab)) {
            Some(o) => o,
            None => {
                let o = Outcome::Failed(
                    "this model waits for its results; drive the run asynchronously".into(),
                );
                self.shared.borrow_mut().outcome = Some(o.clone());
                o
            }
        }
    }

    /// Runs a toy-mode state to its end now: builds the toy model, its vocabulary and the
    /// constraint, and drives the sampler. Errors (a real-model state, a grammar that does
    /// not compile, a state that does not validate) are one line.
    pub fn run_toy(state: &crate::state::PlaygroundState) -> Result<Run, String> {
        let run = Run::from_state(state)?;
        let toy = state
            .model
            .toy()
            .ok_or("this state uses the real model, not a toy one")?;
        let (mut lm, vocab) = crate::toy::build(toy);
        let c = crate::constraint::build_constraint(state.grammar_kind, &state.grammar, &vocab)
            .map_err(|e| e.to_string())?;
        run.drive_ready(&mut lm, &c, Some(&vocab));
        Ok(run)
    }

    /// Asks the run to stop (Esc); the sampler stops at its next model call.
    pub fn cancel(&self) {
        if !self.cancel.replace(true) {
            let hooks = std::mem::take(&mut *self.on_cancel.borrow_mut());
            hooks.into_iter().for_each(|f| f());
        }
    }

    /// Whether Stop was pressed.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.get()
    }

    /// How the run ended; `None` while it runs.
    pub fn outcome(&self) -> Option<Outcome> {
        self.shared.borrow().outcome.clone()
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.shared.borrow().outcome.is_some()
    }

    /// Events recorded so far.
    pub fn len(&self) -> usize {
        self.shared.borrow().events.len()
    }

    /// Whether no event was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether events were dropped past [`MAX_EVENTS`].
    pub fn truncated(&self) -> bool {
        self.shared.borrow().truncated
    }

    /// The `i`-th recorded event.
    pub fn event(&self, i: usize) -> Option<RecordedEvent> {
        self.shared.borrow().events.get(i).cloned()
    }

    /// The events from index `from` on (what is new since the page last looked).
    pub fn events_from(&self, from: usize) -> Vec<RecordedEvent> {
        let s = self.shared.borrow();
        s.events.get(from..).map(<[_]>::to_vec).unwrap_or_default()
    }

    /// At most `n` events from index `from` on (clones only those).
    pub fn events_range(&self, from: usize, n: usize) -> Vec<RecordedEvent> {
        let s = self.shared.borrow();
        let end = from.saturating_add(n).min(s.events.len());
        s.events
            .get(from..end)
            .map(<[_]>::to_vec)
            .unwrap_or_default()
    }

    /// The samples produced so far, in order.
    pub fn samples(&self) -> Vec<Sample> {
        self.shared.borrow().samples.clone()
    }

    /// Model calls, forward tokens and constraint checks so far (updated during the run).
    pub fn live_counters(&self) -> LiveCounters {
        self.live.get()
    }
}

/// Polls `fut` once with a waker that does nothing: `Some` when it finished.
fn poll_once<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}
