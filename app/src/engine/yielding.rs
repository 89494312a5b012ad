//! [`Yielding`]: the one wrapper that gives the browser a turn during sampling, so the
//! page repaints (each streamed token, a toy run's animation) and Stop (Esc) is seen.
//!
//! Counting, the cap on model calls and cancellation are the sampler's context's
//! (`EventSink::progress`, `EventSink::cancelled`); pausing inside a CPU forward pass is
//! `lm::Backend::lend`'s; spreading work over the worker pool is `PooledLm`'s.

use super::browser_turn::yield_now;
use super::request::{STOPPED, StopCheck};
use crate::clock::now_ms;
use sampler_core::{LanguageModel, LmError, TokenId};

/// Longest stretch of sampling between two turns of the browser for a model that answers
/// at once (the toy models), in milliseconds.
const SLICE_MS: f64 = 8.0;

/// `L`, yielding to the browser before its calls and ending a call once `stop` says so
/// (the sampler's context then ends the run as cancelled).
pub struct Yielding<L> {
    inner: L,
    /// Sampling time between two turns; 0: a turn before every call.
    slice_ms: f64,
    last: f64,
    stop: StopCheck,
}

impl<L> Yielding<L> {
    /// A turn before every call: a real model, whose every forward pass is long.
    pub fn every_call(inner: L, stop: StopCheck) -> Self {
        Self::with_slice(inner, stop, 0.0)
    }

    /// A turn at most every [`SLICE_MS`] of sampling: a toy model, which answers at once.
    pub fn sliced(inner: L, stop: StopCheck) -> Self {
        Self::with_slice(inner, stop, SLICE_MS)
    }

    fn with_slice(inner: L, stop: StopCheck, slice_ms: f64) -> Self {
        Yielding {
            inner,
            slice_ms,
            last: now_ms(),
            stop,
        }
    }

    /// Yields when the slice is spent; fails once Stop was pressed.
    async fn checkpoint(&mut self) -> Result<(), LmError> {
        if self.slice_ms == 0.0 || now_ms() - self.last > self.slice_ms {
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
