//! Where the network runs. The page talks to [`Backend`] only, so a GPU forward pass is one
//! more variant here (and in [`BackendLm`]) rather than a change to the samplers or the UI.

use super::yield_now;
use lm::{Model, PromptedModel};
use sampler_core::{LanguageModel, LmError, TokenId};
use std::sync::Arc;

/// A loaded model on one compute backend.
pub enum Backend {
    /// `lm`'s CPU forward pass, compiled to wasm (quantized weights in wasm memory).
    Cpu(Arc<Model>),
}

impl Backend {
    /// Parses a GGUF file's bytes on the CPU backend.
    pub fn cpu(bytes: Vec<u8>) -> Result<Backend, String> {
        Model::from_bytes(bytes).map(|m| Backend::Cpu(Arc::new(m))).map_err(|e| e.to_string())
    }

    /// The model (header, configuration, tokenizer).
    pub fn model(&self) -> &Model {
        match self {
            Backend::Cpu(m) => m,
        }
    }

    /// Where it runs, for the page.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Cpu(_) => "CPU (wasm)",
        }
    }

    /// The model conditioned on `prompt`, as the samplers see it.
    pub fn conditioned(&self, prompt: Vec<TokenId>) -> Result<BackendLm, LmError> {
        match self {
            Backend::Cpu(m) => Ok(BackendLm::Cpu(PromptedModel::new(m.clone(), prompt)?)),
        }
    }
}

/// A conditioned model that yields to the browser before every forward pass, so the page
/// repaints each streamed token and Stop (Esc) is handled between tokens.
pub enum BackendLm {
    /// See [`Backend::Cpu`].
    Cpu(PromptedModel),
}

impl LanguageModel for BackendLm {
    fn vocab_size(&self) -> usize {
        match self {
            BackendLm::Cpu(m) => m.vocab_size(),
        }
    }

    fn eos(&self) -> TokenId {
        match self {
            BackendLm::Cpu(m) => m.eos(),
        }
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        yield_now().await;
        match self {
            BackendLm::Cpu(m) => m.logprobs(prefix).await,
        }
    }

    fn forward_tokens(&self) -> u64 {
        match self {
            BackendLm::Cpu(m) => m.forward_tokens(),
        }
    }
}
