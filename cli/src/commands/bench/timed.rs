//! Where a run's time goes: a model and a constraint that forward every call and add its
//! wall time to one of three clocks (the model's forward passes, the constraint's token
//! checks, its full masks). The rest of a run's time is the sampler's own bookkeeping.
//! Only `strait bench faithful` wraps its runs this way; the samplers never see a clock.

use sampler_core::{
    Constraint, LanguageModel, LmError, Regular, TensorizedAutomaton, TokenId, TokenSet,
};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// The three clocks, read after the run.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Split {
    /// Time inside the model's `logprobs` and `logprobs_batch`.
    pub(super) model: Duration,
    /// Time inside `advance`, `allows` and `is_complete` (one token at a time).
    pub(super) checks: Duration,
    /// Time inside `mask` and the budget mask (the whole vocabulary at once), and the
    /// automaton state P-GCD's guide reads the budget mask from.
    pub(super) masks: Duration,
}

/// Runs `f` and adds its wall time to `clock`.
fn timed<R>(clock: &Cell<Duration>, f: impl FnOnce() -> R) -> R {
    let t0 = Instant::now();
    let r = f();
    clock.set(clock.get() + t0.elapsed());
    r
}

/// A model whose forward passes are timed.
pub(super) struct TimedLm<'a, L> {
    pub(super) inner: &'a mut L,
    pub(super) clock: Cell<Duration>,
}

impl<L: LanguageModel> LanguageModel for TimedLm<'_, L> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.inner.eos()
    }
    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        let t0 = Instant::now();
        let r = self.inner.logprobs(prefix).await;
        self.clock.set(self.clock.get() + t0.elapsed());
        r
    }
    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        let t0 = Instant::now();
        let r = self.inner.logprobs_batch(prefixes).await;
        self.clock.set(self.clock.get() + t0.elapsed());
        r
    }
    fn forward_tokens(&self) -> u64 {
        self.inner.forward_tokens()
    }
}

/// A constraint whose checks and masks are timed on two clocks.
pub(super) struct TimedConstraint<'a, C> {
    pub(super) inner: &'a C,
    pub(super) checks: Cell<Duration>,
    pub(super) masks: Cell<Duration>,
}

impl<'a, C: Constraint> TimedConstraint<'a, C> {
    /// `inner` with both clocks at zero.
    pub(super) fn new(inner: &'a C) -> Self {
        TimedConstraint {
            inner,
            checks: Cell::default(),
            masks: Cell::default(),
        }
    }
}

impl<C: Constraint> Constraint for TimedConstraint<'_, C> {
    type State = C::State;
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.inner.eos()
    }
    fn initial(&self) -> C::State {
        self.inner.initial()
    }
    fn advance(&self, state: &C::State, token: TokenId) -> Option<C::State> {
        timed(&self.checks, || self.inner.advance(state, token))
    }
    fn is_complete(&self, state: &C::State) -> bool {
        timed(&self.checks, || self.inner.is_complete(state))
    }
    fn allows(&self, state: &C::State, token: TokenId) -> bool {
        timed(&self.checks, || self.inner.allows(state, token))
    }
    fn mask(&self, state: &C::State) -> TokenSet {
        timed(&self.masks, || self.inner.mask(state))
    }
    fn regular(&self) -> Option<&dyn Regular<C::State>> {
        self.inner.regular().map(|_| self as &dyn Regular<C::State>)
    }
    fn take_error(&self) -> Option<String> {
        self.inner.take_error()
    }
}

/// The regular view, timed: only reached through [`TimedConstraint::regular`], which
/// offers it exactly when the inner constraint has one.
impl<C: Constraint> Regular<C::State> for TimedConstraint<'_, C> {
    fn budget_mask(&self, state: &C::State, remaining: usize) -> TokenSet {
        let inner = self.inner.regular().expect("offered only when regular");
        timed(&self.masks, || inner.budget_mask(state, remaining))
    }
    fn tensorized(&self) -> Option<&TensorizedAutomaton> {
        self.inner.regular()?.tensorized()
    }
    fn tensor_state(&self, state: &C::State) -> Option<u32> {
        let inner = self.inner.regular()?;
        timed(&self.masks, || inner.tensor_state(state))
    }
}
