//! [`Prompted`]: an [`Engine`] conditioned on a prompt, as the samplers see it.

use super::Engine;
use crate::forward::{NoPause, Pause, log_softmax};
use crate::slots::{SlotCaches, Slots};
use sampler_core::{LanguageModel, LmError, TokenId};

/// An [`Engine`] holding a prompt, implementing [`LanguageModel`].
///
/// The engine's KV caches ("slots", [`Engine::slots`]) follow the rule of
/// [`crate::PromptedModel`]'s (`crate::slots`): a call runs only the tokens after the
/// longest prefix some slot holds, and [`LanguageModel::logprobs_batch`] runs the new
/// tokens of up to [`Engine::slots`] distinct sequences in one pass. An engine with one
/// cache reuses it by longest common prefix.
#[derive(Debug)]
pub struct Prompted<E> {
    engine: E,
    prompt: Vec<TokenId>,
    slots: Slots,
}

/// An engine's slots, as [`Slots`] drives them.
struct OnEngine<'a, E>(&'a mut E);

impl<E: Engine> SlotCaches for OnEngine<'_, E> {
    fn capacity(&self) -> usize {
        self.0.slots()
    }

    fn context(&self) -> (usize, &'static str) {
        (self.0.max_context(), self.0.context_name())
    }

    /// The engine holds its slots from the start.
    fn add(&mut self) {}

    fn copy_prefix(&mut self, from: usize, to: usize, keep: usize) -> Result<(), LmError> {
        self.0.copy_prefix(from, to, keep)
    }

    fn truncate(&mut self, slot: usize, keep: usize) {
        self.0.truncate_slot(slot, keep)
    }

    async fn forward(
        &mut self,
        runs: &[(usize, &[TokenId])],
        _pause: &mut impl Pause,
    ) -> Result<Vec<Vec<f32>>, LmError> {
        self.0.forward_slots(runs).await
    }
}

impl<E: Engine> Prompted<E> {
    /// Whether [`Prompted::new`] would take `prompt` for `engine` (so a caller lending out
    /// the engine can check first and keep it).
    pub fn check_prompt(engine: &E, prompt: &[TokenId]) -> Result<(), LmError> {
        engine.check_prompt(prompt)
    }

    /// Conditions `engine` on `prompt` ([`Engine::check_prompt`]; on an error the engine is
    /// dropped).
    pub fn new(mut engine: E, prompt: Vec<TokenId>) -> Result<Self, LmError> {
        engine.check_prompt(&prompt)?;
        for slot in 0..engine.slots() {
            engine.truncate_slot(slot, 0);
        }
        let slots = Slots::new(Vec::new(), engine.slots());
        Ok(Prompted {
            engine,
            prompt,
            slots,
        })
    }

    /// The engine.
    pub fn model(&self) -> &E {
        &self.engine
    }

    /// Gives the engine back (to condition it on another prompt).
    pub fn into_model(self) -> E {
        self.engine
    }

    /// The prompt tokens.
    pub fn prompt(&self) -> &[TokenId] {
        &self.prompt
    }

    /// Tokens cached in the most recently used slot (prompt included).
    pub fn cached_len(&self) -> usize {
        self.slots.cached_len()
    }

    /// Next-token logits (not normalized) after `prompt ++ prefix`.
    pub async fn logits(&mut self, prefix: &[TokenId]) -> Result<Vec<f32>, LmError> {
        Ok(self.run(&[prefix]).await?.remove(0))
    }

    /// The logits after each `prompt ++ prefix`.
    async fn run(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f32>>, LmError> {
        let mut caches = OnEngine(&mut self.engine);
        self.slots
            .run(&mut caches, &self.prompt, prefixes, &mut NoPause)
            .await
    }
}

impl<E: Engine> LanguageModel for Prompted<E> {
    fn vocab_size(&self) -> usize {
        self.engine.config().vocab_size
    }

    fn eos(&self) -> TokenId {
        self.engine.eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        Ok(log_softmax(&self.logits(prefix).await?))
    }

    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        let logits = self.run(prefixes).await?;
        Ok(logits.iter().map(|l| log_softmax(l)).collect())
    }

    fn forward_tokens(&self) -> u64 {
        self.slots.forward_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::CpuEngine;
    use crate::test_gguf::tiny_llama;
    use crate::{Model, PromptedModel};
    use sampler_core::block_on;
    use std::sync::Arc;

    /// The one-cache prompted model over the CPU engine answers as the CPU's many-slot
    /// [`PromptedModel`] does, through branches, rewinds and a repeated call, and runs
    /// only the tokens past the shared prefix.
    #[test]
    fn over_the_cpu_engine_it_matches_the_slotted_model() {
        let model = Arc::new(Model::from_bytes(tiny_llama()).unwrap());
        let mut one = Prompted::new(CpuEngine::new(model.clone()), vec![1, 2]).unwrap();
        let mut slotted = PromptedModel::new(model, vec![1, 2]).unwrap();
        let prefixes: [&[TokenId]; 5] = [&[], &[3, 4], &[3, 4, 5], &[3], &[3, 4, 5]];
        for p in prefixes {
            let a = block_on(one.logprobs(p)).unwrap();
            let b = block_on(slotted.logprobs(p)).unwrap();
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() < 1e-5, "{p:?}: {x} vs {y}");
            }
        }
        // 2 (prompt) + 2 + 1, then [3] reruns 3 after the prompt, then 4, 5 again.
        assert_eq!(one.forward_tokens(), 2 + 2 + 1 + 1 + 2);
        assert_eq!(one.cached_len(), 5);
    }

    /// A prompt the engine cannot take is refused with the engine's own words.
    #[test]
    fn prompts_are_checked_against_the_engine() {
        let model = Arc::new(Model::from_bytes(tiny_llama()).unwrap());
        let e = CpuEngine::new(model);
        let ctx = e.max_context();
        let err = Prompted::check_prompt(&e, &vec![1; ctx + 1]).unwrap_err();
        assert!(err.0.contains("exceeds the context"), "{}", err.0);
        assert!(
            Prompted::check_prompt(&e, &[])
                .unwrap_err()
                .0
                .contains("empty")
        );
        let err = Prompted::new(e, vec![1, 999]).unwrap_err();
        assert!(err.0.contains("outside the vocabulary"), "{}", err.0);
    }
}
