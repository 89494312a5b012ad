//! [`CpuEngine`]: the CPU forward pass with one KV cache, as an [`Engine`].

use super::Engine;
use crate::config::LlamaConfig;
use crate::forward::KvCache;
use crate::model::Model;
use sampler_core::{LmError, TokenId};
use std::sync::Arc;

/// [`Model`]'s CPU forward pass and one [`KvCache`].
///
/// [`crate::PromptedModel`] keeps many caches for one model (SMC particles, CARS restarts)
/// and runs them in one batched pass; this is the one-cache form every engine offers.
#[derive(Debug)]
pub struct CpuEngine {
    model: Arc<Model>,
    cache: KvCache,
}

impl CpuEngine {
    /// `model` with an empty cache.
    pub fn new(model: Arc<Model>) -> Self {
        let cache = model.new_cache();
        CpuEngine { model, cache }
    }

    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }
}

impl Engine for CpuEngine {
    fn config(&self) -> &LlamaConfig {
        self.model.config()
    }

    fn eos(&self) -> TokenId {
        self.model.tokenizer().eos()
    }

    fn context_name(&self) -> &'static str {
        "the context"
    }

    fn cached(&self) -> usize {
        self.cache.len()
    }

    fn truncate(&mut self, n: usize) {
        self.cache.truncate(n);
    }

    async fn forward(
        &mut self,
        tokens: &[TokenId],
        logits_from: usize,
    ) -> Result<Vec<f32>, LmError> {
        self.model.forward(&mut self.cache, tokens, logits_from)
    }
}
