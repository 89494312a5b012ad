//! Where the network runs. The page talks to [`Backend`] only, so a GPU forward pass is one
//! more variant here (and in [`BackendLm`]) rather than a change to the samplers or the UI.

use super::yield_now;
use lm::{Model, PromptedModel};
use sampler_core::{LanguageModel, LmError, TokenId};
use std::rc::Rc;
use std::sync::Arc;

/// Says whether the user asked the run to stop.
pub type StopCheck = Rc<dyn Fn() -> bool>;

/// A loaded model on one compute backend.
pub enum Backend {
    /// `lm`'s CPU forward pass, compiled to wasm (quantized weights in wasm memory).
    Cpu(Arc<Model>),
}

impl Backend {
    /// Parses a GGUF file's bytes on the CPU backend.
    pub fn cpu(bytes: Vec<u8>) -> Result<Backend, String> {
        Model::from_bytes(bytes)
            .map(|m| Backend::Cpu(Arc::new(m)))
            .map_err(|e| e.to_string())
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

    /// The model conditioned on `prompt`, as the samplers see it; its forward passes fail
    /// with [`super::STOPPED`] once `stop` says so.
    pub fn conditioned(&self, prompt: Vec<TokenId>, stop: StopCheck) -> Result<BackendLm, LmError> {
        let inner = match self {
            Backend::Cpu(m) => Inner::Cpu(PromptedModel::new(m.clone(), prompt)?),
        };
        Ok(BackendLm { inner, stop })
    }
}

/// A conditioned model that yields to the browser before every forward pass, so the page
/// repaints each streamed token and Stop (Esc) takes effect before the next forward pass.
pub struct BackendLm {
    inner: Inner,
    stop: StopCheck,
}

enum Inner {
    Cpu(PromptedModel),
}

impl LanguageModel for BackendLm {
    fn vocab_size(&self) -> usize {
        match &self.inner {
            Inner::Cpu(m) => m.vocab_size(),
        }
    }

    fn eos(&self) -> TokenId {
        match &self.inner {
            Inner::Cpu(m) => m.eos(),
        }
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        yield_now().await;
        if (self.stop)() {
            return Err(LmError(super::STOPPED.into()));
        }
        match &mut self.inner {
            Inner::Cpu(m) => m.logprobs(prefix).await,
        }
    }

    fn forward_tokens(&self) -> u64 {
        match &self.inner {
            Inner::Cpu(m) => m.forward_tokens(),
        }
    }
}
