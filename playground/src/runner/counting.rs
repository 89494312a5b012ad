//! Wrappers that count model calls and constraint checks into a run's live counters, as
//! the sampler's own context counts them, so the page can show progress between samples.

use super::LiveCounters;
use sampler_core::{Constraint, LanguageModel, LmError, Regular, TokenId, TokenSet};
use std::cell::Cell;
use std::rc::Rc;

/// Counts model calls into the run's live counters.
pub(super) struct CountingLm<'a, L> {
    pub(super) inner: &'a mut L,
    pub(super) live: Rc<Cell<LiveCounters>>,
}

impl<L: LanguageModel> CountingLm<'_, L> {
    fn count(&self, calls: u64) {
        let mut c = self.live.get();
        c.lm_calls += calls;
        c.forward_tokens = self.inner.forward_tokens();
        self.live.set(c);
    }
}

impl<L: LanguageModel> LanguageModel for CountingLm<'_, L> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.inner.eos()
    }
    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        let r = self.inner.logprobs(prefix).await;
        self.count(1);
        r
    }
    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        let r = self.inner.logprobs_batch(prefixes).await;
        self.count(prefixes.len() as u64);
        r
    }
    fn forward_tokens(&self) -> u64 {
        self.inner.forward_tokens()
    }
}

/// Counts constraint checks into the run's live counters (as the sampler's context does).
pub(super) struct CountingConstraint<'a, C> {
    pub(super) inner: &'a C,
    pub(super) live: Rc<Cell<LiveCounters>>,
}

impl<C> CountingConstraint<'_, C> {
    fn count(&self, checks: u64) {
        let mut c = self.live.get();
        c.constraint_checks += checks;
        self.live.set(c);
    }
}

impl<C: Constraint> Constraint for CountingConstraint<'_, C> {
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
        self.count(1);
        self.inner.advance(state, token)
    }
    fn is_complete(&self, state: &C::State) -> bool {
        self.count(1);
        self.inner.is_complete(state)
    }
    fn allows(&self, state: &C::State, token: TokenId) -> bool {
        self.count(1);
        self.inner.allows(state, token)
    }
    fn mask(&self, state: &C::State) -> TokenSet {
        self.count(self.inner.vocab_size() as u64);
        self.inner.mask(state)
    }
    /// The inner constraint's regular view, uncounted: the sampler's context counts a
    /// budget mask or a tensor-state lookup, but the live counters miss them.
    fn regular(&self) -> Option<&dyn Regular<C::State>> {
        self.inner.regular()
    }
    fn take_error(&self) -> Option<String> {
        self.inner.take_error()
    }
}
