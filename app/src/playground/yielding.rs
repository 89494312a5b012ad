//! A model wrapper that gives the browser a turn every few milliseconds of sampling, so a
//! toy run (whose model answers instantly) never freezes the tab and Stop is seen.

use crate::clock::now_ms;
use crate::engine::yield_now;
use sampler_core::{LanguageModel, LmError, TokenId};
use std::rc::Rc;

/// Longest stretch of sampling between two turns of the browser, in milliseconds.
const SLICE_MS: f64 = 8.0;

/// `L`, yielding to the browser at most every [`SLICE_MS`] and failing once `stop` says so.
pub struct Yielding<L> {
    inner: L,
    last: f64,
    stop: Rc<dyn Fn() -> bool>,
}

/// The error a stopped run's model calls return.
pub const STOPPED: &str = "stopped";

impl<L> Yielding<L> {
    /// Wraps `inner`.
    pub fn new(inner: L, stop: Rc<dyn Fn() -> bool>) -> Self {
        Yielding {
            inner,
            last: now_ms(),
            stop,
        }
    }
}

impl<L> Yielding<L> {
    /// Yields when the slice is spent, then fails with STOPPED if Stop was pressed.
    async fn checkpoint(&mut self) -> Result<(), LmError> {
        if now_ms() - self.last > SLICE_MS {
            yield_now().await;
            self.last = now_ms();
        }
        if (self.stop)() {
            return Err(LmError(STOPPED.into()));
        }
        Ok(())
    }
}

impl<L: LanguageModel> LanguageModel for Yielding<L> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    fn eos(&self) -> TokenId {
        self.inner.eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        self.checkpoint().await?;
        self.inner.logprobs(prefix).await
    }

    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        self.checkpoint().await?;
        self.inner.logprobs_batch(prefixes).await
    }

    fn forward_tokens(&self) -> u64 {
        self.inner.forward_tokens()
    }
}
