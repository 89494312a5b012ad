//! [`Prompted`]: an [`Engine`] conditioned on a prompt, as the samplers see it.

use super::Engine;
use crate::forward::log_softmax;
use crate::prefix_reuse::reuse;
use sampler_core::{LanguageModel, LmError, TokenId};

/// An [`Engine`] holding a prompt, implementing [`LanguageModel`].
///
/// The engine's cache is reused by longest common prefix (`prefix_reuse`, the rule
/// [`crate::PromptedModel`]'s slots follow too): a call runs only the tokens after the
/// prefix it shares with the previous call.
#[derive(Debug)]
pub struct Prompted<E> {
    engine: E,
    prompt: Vec<TokenId>,
    /// The tokens whose keys and values are in the engine's cache.
    cached: Vec<TokenId>,
    /// Logits after the last token of `cached`.
    last_logits: Option<Vec<f32>>,
    forward_tokens: u64,
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
        engine.truncate(0);
        Ok(Prompted {
            engine,
            prompt,
            cached: Vec::new(),
            last_logits: None,
            forward_tokens: 0,
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

    /// Tokens whose keys and values are cached (prompt included).
    pub fn cached_len(&self) -> usize {
        self.cached.len()
    }

    /// Next-token logits (not normalized) after `prompt ++ prefix`.
    pub async fn logits(&mut self, prefix: &[TokenId]) -> Result<&[f32], LmError> {
        let total = self.prompt.len() + prefix.len();
        let ctx = self.engine.max_context();
        if total > ctx {
            return Err(LmError(format!(
                "prompt of {} tokens and {} generated tokens exceed {} of {ctx}",
                self.prompt.len(),
                prefix.len(),
                self.engine.context_name()
            )));
        }
        let full: Vec<TokenId> = self.prompt.iter().chain(prefix).copied().collect();
        let r = reuse(&self.cached, self.last_logits.is_some(), &full);
        if r.answered {
            return Ok(self.last_logits.as_deref().unwrap_or_default());
        }
        let keep = r.keep;
        let new = full[keep..].to_vec();
        self.engine.truncate(keep);
        self.cached.truncate(keep);
        self.last_logits = None;
        match self.engine.forward(&new, new.len() - 1).await {
            Ok(logits) => {
                self.forward_tokens += new.len() as u64;
                self.cached.extend_from_slice(&new);
                Ok(self.last_logits.insert(logits))
            }
            Err(e) => {
                // The cache may hold part of the run; start over next time.
                self.engine.truncate(0);
                self.cached.clear();
                Err(e)
            }
        }
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
        Ok(log_softmax(self.logits(prefix).await?))
    }

    fn forward_tokens(&self) -> u64 {
        self.forward_tokens
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
