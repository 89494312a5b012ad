//! [`BurnPromptedModel`]: a [`BurnModel`] conditioned on a prompt, as the samplers see it.

use super::model::BurnModel;
use crate::forward::{check_run, log_softmax};
use crate::prefix_reuse::reuse;
use sampler_core::{LanguageModel, LmError, TokenId};

/// A [`BurnModel`] holding a prompt, implementing [`LanguageModel`].
///
/// The KV cache is reused by longest common prefix, by the rule the other engines share
/// (`prefix_reuse`): only the tokens after the prefix shared with the previous call run.
#[derive(Debug)]
pub struct BurnPromptedModel {
    model: BurnModel,
    prompt: Vec<TokenId>,
    /// The tokens whose keys and values are in the model's cache.
    cached: Vec<TokenId>,
    /// Logits after the last token of `cached`.
    last_logits: Option<Vec<f32>>,
    forward_tokens: u64,
}

impl BurnPromptedModel {
    /// Whether [`BurnPromptedModel::new`] would take `prompt` for `model`: non-empty, within
    /// the model's context and vocabulary (so a caller lending out the model can check
    /// first and keep it).
    pub fn check_prompt(model: &BurnModel, prompt: &[TokenId]) -> Result<(), LmError> {
        let c = model.config();
        crate::prefix_reuse::check_prompt(prompt, c.context_length, "the model's context")?;
        check_run(c, 0, prompt)
    }

    /// Conditions `model` on `prompt` ([`BurnPromptedModel::check_prompt`]; on an error the
    /// model is dropped).
    pub fn new(mut model: BurnModel, prompt: Vec<TokenId>) -> Result<Self, LmError> {
        Self::check_prompt(&model, &prompt)?;
        model.truncate(0);
        Ok(BurnPromptedModel {
            model,
            prompt,
            cached: Vec::new(),
            last_logits: None,
            forward_tokens: 0,
        })
    }

    /// Gives the model back (to condition it on another prompt).
    pub fn into_model(self) -> BurnModel {
        self.model
    }

    /// Tokens whose keys and values are cached (prompt included).
    pub fn cached_len(&self) -> usize {
        self.cached.len()
    }

    /// Next-token logits (not normalized) after `prompt ++ prefix`.
    pub async fn logits(&mut self, prefix: &[TokenId]) -> Result<&[f32], LmError> {
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

impl LanguageModel for BurnPromptedModel {
    fn vocab_size(&self) -> usize {
        self.model.config().vocab_size
    }

    fn eos(&self) -> TokenId {
        self.model.model().tokenizer().eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        Ok(log_softmax(self.logits(prefix).await?))
    }

    fn forward_tokens(&self) -> u64 {
        self.forward_tokens
    }
}
