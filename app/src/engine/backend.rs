//! Where the network runs. The page talks to [`Backend`] only: `lm`'s CPU forward pass
//! compiled to wasm, or its WebGPU forward pass (`lm::gpu`, WGSL kernels on quantized
//! weights). `auto` picks the GPU unless the only adapter is a software one (SwiftShader),
//! where the CPU path is faster; `?backend=gpu` or `?backend=cpu` in the URL forces one.

use super::yield_now;
use lm::gpu::{DEFAULT_GPU_CONTEXT, Gpu, GpuModel, GpuPromptedModel};
use lm::{Model, PromptedModel};
use sampler_core::{LanguageModel, LmError, TokenId};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// Says whether the user asked the run to stop.
pub type StopCheck = Rc<dyn Fn() -> bool>;

/// Which backend the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// The GPU when it is a hardware adapter, the CPU otherwise.
    Auto,
    /// The CPU forward pass (wasm).
    Cpu,
    /// The WebGPU forward pass, even on a software adapter.
    Gpu,
}

impl Choice {
    /// From the page URL's `backend` parameter (`auto` when absent or unknown).
    pub fn parse(s: Option<&str>) -> Choice {
        match s {
            Some("cpu") => Choice::Cpu,
            Some("gpu") => Choice::Gpu,
            _ => Choice::Auto,
        }
    }
}

/// A loaded model on one compute backend.
pub enum Backend {
    /// `lm`'s CPU forward pass, compiled to wasm (quantized weights in wasm memory).
    Cpu(Arc<Model>),
    /// `lm::gpu` on WebGPU; the CPU model keeps the header and tokenizer.
    Gpu {
        /// The parsed file (tokenizer, configuration).
        model: Arc<Model>,
        /// The uploaded weights and KV cache; taken by a run, given back after it.
        gpu: Box<RefCell<Option<GpuModel>>>,
        /// The adapter's name.
        adapter: String,
    },
}

impl Backend {
    /// Parses a GGUF file's bytes and puts the model on the backend `choice` selects;
    /// `note` receives why the CPU was used when the GPU was possible.
    pub async fn load(
        bytes: Vec<u8>,
        choice: Choice,
        note: &dyn Fn(String),
    ) -> Result<Backend, String> {
        let model = Arc::new(Model::from_bytes(bytes).map_err(|e| e.to_string())?);
        if choice == Choice::Cpu {
            return Ok(Backend::Cpu(model));
        }
        let gpu = match Gpu::new().await {
            Ok(g) => g,
            Err(e) if choice == Choice::Gpu => return Err(format!("WebGPU: {e}")),
            Err(e) => {
                note(format!(
                    "WebGPU could not be used ({e}); the model runs on the CPU."
                ));
                return Ok(Backend::Cpu(model));
            }
        };
        if gpu.is_cpu() && choice == Choice::Auto {
            note(format!(
                "The only WebGPU adapter is a software one ({}), slower than the CPU path: the \
                 model runs on the CPU (add ?backend=gpu to the URL to use it anyway).",
                gpu.adapter_name()
            ));
            return Ok(Backend::Cpu(model));
        }
        let adapter = gpu.adapter_name();
        yield_now().await;
        #[allow(clippy::arc_with_non_send_sync)] // WebGPU handles; the page is single-threaded
        let gpu = Arc::new(gpu);
        let g = GpuModel::with_gpu(gpu, &model, DEFAULT_GPU_CONTEXT)
            .await
            .map_err(|e| format!("uploading the model to the GPU ({adapter}) failed: {e}"))?;
        Ok(Backend::Gpu {
            model,
            gpu: Box::new(RefCell::new(Some(g))),
            adapter,
        })
    }

    /// The model (header, configuration, tokenizer).
    pub fn model(&self) -> &Model {
        match self {
            Backend::Cpu(m) | Backend::Gpu { model: m, .. } => m,
        }
    }

    /// Where it runs, for the page.
    pub fn name(&self) -> String {
        match self {
            Backend::Cpu(_) => "CPU (wasm)".into(),
            Backend::Gpu { adapter, gpu, .. } => {
                let mb = gpu
                    .borrow()
                    .as_ref()
                    .map_or(0.0, |g| g.buffer_bytes() as f64 / 1e6);
                format!("WebGPU: {adapter}, {mb:.1} MB of GPU buffers")
            }
        }
    }

    /// The model conditioned on `prompt`, as the samplers see it; its forward passes fail
    /// with [`super::STOPPED`] once `stop` says so. Give it back with [`Backend::restore`].
    pub fn conditioned(&self, prompt: Vec<TokenId>, stop: StopCheck) -> Result<BackendLm, LmError> {
        let inner = match self {
            Backend::Cpu(m) => Inner::Cpu(PromptedModel::new(m.clone(), prompt)?),
            Backend::Gpu { gpu, .. } => {
                let mut slot = gpu.borrow_mut();
                let g = slot
                    .as_ref()
                    .ok_or_else(|| LmError("the GPU model is busy".into()))?;
                // Checked here so that a refused prompt does not consume the GPU model.
                if prompt.is_empty() || prompt.len() > g.max_context() {
                    return Err(LmError(format!(
                        "the prompt has {} tokens; the GPU context holds 1 to {}",
                        prompt.len(),
                        g.max_context()
                    )));
                }
                let g = slot
                    .take()
                    .ok_or_else(|| LmError("the GPU model is busy".into()))?;
                Inner::Gpu(Box::new(GpuPromptedModel::new(g, prompt)?))
            }
        };
        Ok(BackendLm { inner, stop })
    }

    /// Takes back what [`Backend::conditioned`] lent (the GPU model).
    pub fn restore(&self, lm: BackendLm) {
        if let (Backend::Gpu { gpu, .. }, Inner::Gpu(m)) = (self, lm.inner) {
            *gpu.borrow_mut() = Some(m.into_model());
        }
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
    Gpu(Box<GpuPromptedModel>),
}

impl LanguageModel for BackendLm {
    fn vocab_size(&self) -> usize {
        match &self.inner {
            Inner::Cpu(m) => m.vocab_size(),
            Inner::Gpu(m) => m.vocab_size(),
        }
    }

    fn eos(&self) -> TokenId {
        match &self.inner {
            Inner::Cpu(m) => m.eos(),
            Inner::Gpu(m) => m.eos(),
        }
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        yield_now().await;
        if (self.stop)() {
            return Err(LmError(super::STOPPED.into()));
        }
        match &mut self.inner {
            Inner::Cpu(m) => m.logprobs(prefix).await,
            Inner::Gpu(m) => m.logprobs(prefix).await,
        }
    }

    fn forward_tokens(&self) -> u64 {
        match &self.inner {
            Inner::Cpu(m) => m.forward_tokens(),
            Inner::Gpu(m) => m.forward_tokens(),
        }
    }
}
