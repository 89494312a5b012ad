//! The engine seam: one forward pass with its KV caches, whatever computes it.
//!
//! The CPU forward pass ([`CpuEngine`]), the wgpu one ([`crate::gpu::GpuModel`]) and the
//! burn program (`lm::burn::BurnModel`, feature `burn`) each implement [`Engine`], so the
//! code that conditions a model on a prompt and reuses its cache ([`Prompted`]) and the
//! code that lends an engine out for a run ([`crate::backend`]) is written once.

mod cpu;
mod prompted;

pub use cpu::CpuEngine;
pub use prompted::Prompted;

use crate::config::LlamaConfig;
use sampler_core::{LmError, TokenId};

/// A forward pass with a KV cache, or several side by side ([`Engine::slots`]).
///
/// A cache holds the keys and values of the tokens run so far, from position 0;
/// [`Engine::forward`] appends to the first (slot 0) and [`Engine::truncate`] cuts it back;
/// [`Engine::forward_slots`] runs several slots in one pass.
#[allow(async_fn_in_trait)]
pub trait Engine {
    /// The hyper-parameters.
    fn config(&self) -> &LlamaConfig;

    /// The end-of-sequence token.
    fn eos(&self) -> TokenId;

    /// Positions the cache can hold (at most the model's context; by default all of it).
    fn max_context(&self) -> usize {
        self.config().context_length
    }

    /// How messages name [`Engine::max_context`] ("the context", "the GPU context").
    fn context_name(&self) -> &'static str;

    /// Positions in the cache.
    fn cached(&self) -> usize;

    /// Keeps the first `n` cached positions (no-op if it holds fewer).
    fn truncate(&mut self, n: usize);

    /// Runs `tokens` after the cached positions (appending theirs) and returns the logits
    /// of positions `logits_from..tokens.len()`, `vocab_size` floats each. On an error the
    /// cache may hold part of the run: callers truncate it.
    async fn forward(
        &mut self,
        tokens: &[TokenId],
        logits_from: usize,
    ) -> Result<Vec<f32>, LmError>;

    /// KV caches ("slots") the engine holds side by side, each one sequence, which
    /// [`Engine::forward_slots`] runs together; 1 unless the engine batches. Slot 0 is the
    /// cache that [`Engine::cached`], [`Engine::truncate`] and [`Engine::forward`] use.
    fn slots(&self) -> usize {
        1
    }

    /// Keeps the first `n` positions of slot `slot` (no-op if it holds fewer).
    fn truncate_slot(&mut self, slot: usize, n: usize) {
        if slot == 0 {
            self.truncate(n)
        }
    }

    /// Makes slot `to` hold the first `n` positions of slot `from`.
    fn copy_prefix(&mut self, from: usize, to: usize, n: usize) -> Result<(), LmError> {
        let _ = n;
        Err(LmError(format!(
            "this engine holds one KV cache: there is no slot {} to copy",
            from.max(to)
        )))
    }

    /// Runs several sequences in one pass: each `(slot, tokens)` (distinct slots, each with
    /// a token or more) runs `tokens` after the positions in its slot, appending theirs;
    /// returns the logits after each run's last token, `vocab_size` floats each. On an
    /// error the slots may hold part of their runs: callers truncate them. An engine with
    /// one slot takes one run.
    async fn forward_slots(
        &mut self,
        runs: &[(usize, &[TokenId])],
    ) -> Result<Vec<Vec<f32>>, LmError> {
        match runs {
            [(0, tokens)] if !tokens.is_empty() => {
                Ok(vec![self.forward(tokens, tokens.len() - 1).await?])
            }
            _ => Err(LmError(
                "this engine runs one sequence at a time, in slot 0".into(),
            )),
        }
    }

    /// Whether the device the engine runs on still works (a GPU can be lost); `Err` says
    /// why not.
    fn check_device(&self) -> Result<(), String> {
        Ok(())
    }

    /// Whether `prompt` can condition this engine: non-empty, within
    /// [`Engine::max_context`], every token in the vocabulary.
    fn check_prompt(&self, prompt: &[TokenId]) -> Result<(), LmError> {
        crate::prefix_reuse::check_prompt(prompt, self.max_context(), self.context_name())?;
        crate::forward::check_run(self.config(), 0, prompt)
    }
}
