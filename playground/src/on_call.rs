//! A model wrapper that reports every call: how the page shows an exact enumeration's
//! progress and how the worker posts a run's batch before each model call.

use sampler_core::{LanguageModel, LmError, TokenId};

/// `L`, calling `f` with the number of next-token distributions asked so far before each
/// call.
pub struct OnCall<L> {
    inner: L,
    calls: u64,
    f: Box<dyn FnMut(u64)>,
}

impl<L> OnCall<L> {
    /// Wraps `inner`.
    pub fn new(inner: L, f: impl FnMut(u64) + 'static) -> Self {
        OnCall {
            inner,
            calls: 0,
            f: Box::new(f),
        }
    }
}

impl<L: LanguageModel> LanguageModel for OnCall<L> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    fn eos(&self) -> TokenId {
        self.inner.eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        self.calls += 1;
        (self.f)(self.calls);
        self.inner.logprobs(prefix).await
    }

    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        self.calls += prefixes.len() as u64;
        (self.f)(self.calls);
        self.inner.logprobs_batch(prefixes).await
    }

    fn forward_tokens(&self) -> u64 {
        self.inner.forward_tokens()
    }
}
