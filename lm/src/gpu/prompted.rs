//! [`GpuPromptedModel`]: a [`GpuModel`] conditioned on a prompt, as the samplers see it.

use super::model::GpuModel;
use crate::forward::log_softmax;
use crate::prefix_reuse::reuse;
use sampler_core::{LanguageModel, LmError, TokenId};

/// A [`GpuModel`] holding a prompt, implementing [`LanguageModel`] on the GPU.
///
/// The GPU KV cache is reused by longest common prefix, by the same rule as
/// [`crate::PromptedModel`]'s slots (`prefix_reuse`): only the tokens after the prefix
/// shared with the previous call run.
#[derive(Debug)]
pub struct GpuPromptedModel {
    model: GpuModel,
    prompt: Vec<TokenId>,
    /// The tokens whose keys and values are in the model's cache.
    cached: Vec<TokenId>,
    /// Logits after the last token of `cached`.
    last_logits: Option<Vec<f32>>,
    forward_tokens: u64,
}

impl GpuPromptedModel {
    /// Whether [`GpuPromptedModel::new`] would take `prompt` for `model`: non-empty and
    /// within the GPU context (so a caller lending out the model can check first and keep it).
    pub fn check_prompt(model: &GpuModel, prompt: &[TokenId]) -> Result<(), LmError> {
        crate::prefix_reuse::check_prompt(prompt, model.max_context(), "the GPU context")
    }

    /// Conditions `model` on `prompt`; the prompt must be non-empty and fit the GPU context
    /// ([`GpuPromptedModel::check_prompt`]; on an error the model is dropped).
    pub fn new(mut model: GpuModel, prompt: Vec<TokenId>) -> Result<Self, LmError> {
        Self::check_prompt(&model, &prompt)?;
        model.truncate(0);
        Ok(GpuPromptedModel {
            model,
            prompt,
            cached: Vec::new(),
            last_logits: None,
            forward_tokens: 0,
        })
    }

    /// The model.
    pub fn model(&self) -> &GpuModel {
        &self.model
    }

    /// Gives the model back (to condition it on another prompt).
    pub fn into_model(self) -> GpuModel {
        self.model
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
        let ctx = self.model.max_context();
        if total > ctx {
            return Err(LmError(format!(
                "prompt of {} tokens and {} generated tokens exceed the GPU context of {ctx}",
                self.prompt.len(),
                prefix.len()
            )));
        }
        let full: Vec<TokenId> = self.prompt.iter().chain(prefix).copied().collect();
        let r = reuse(&self.cached, self.last_logits.is_some(), &full);
        if r.answered {
            return Ok(self.last_logits.as_deref().unwrap_or_default());
        }
        let keep = r.keep;
        let new = full[keep..].to_vec();
        self.model.truncate(keep);
        self.cached.truncate(keep);
        self.last_logits = None;
        match self.model.forward(&new, new.len() - 1).await {
            Ok(logits) => {
                self.forward_tokens += new.len() as u64;
                self.cached.extend_from_slice(&new);
                Ok(self.last_logits.insert(logits))
            }
            Err(e) => {
                // The cache may hold part of the run; start over next time.
                self.model.truncate(0);
                self.cached.clear();
                Err(e)
            }
        }
    }
}

impl LanguageModel for GpuPromptedModel {
    fn vocab_size(&self) -> usize {
        self.model.config().vocab_size
    }

    fn eos(&self) -> TokenId {
        self.model.eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        Ok(log_softmax(self.logits(prefix).await?))
    }

    fn forward_tokens(&self) -> u64 {
        self.forward_tokens
    }
}
