//! Where the network runs. The page talks to [`Backend`] only, so a GPU forward pass is one
//! more variant here (and one more model behind [`BackendLm`]'s handle) rather than a change
//! to the samplers or the UI.

use super::browser_turn::{FramePause, yield_now};
use super::request::{STOPPED, StopCheck};
use crate::format::fmt_mb;
#[cfg(feature = "burn-engine")]
use lm::burn::{BurnModel, BurnPromptedModel};
use lm::gpu::{GpuModel, GpuPromptedModel};
use lm::{Model, PromptedModel};
use sampler_core::{DynLm, LanguageModel, LmError, TokenId};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// Which backend the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// WebGPU unless the adapter is a CPU (software) one, where the wasm CPU path is faster.
    Auto,
    /// WebGPU, whatever the adapter.
    WebGpu,
    /// The CPU forward pass in wasm.
    Cpu,
    /// The burn program (`lm::burn`) on burn's WebGPU backend (`?engine=burn`; only in a
    /// page built with the `burn-engine` feature).
    Burn,
}

impl Choice {
    /// Parses `auto`, `webgpu`, `cpu` (the page's `?backend=` parameter) and `burn`
    /// (`?engine=burn`).
    pub fn parse(s: &str) -> Option<Choice> {
        match s {
            "auto" => Some(Choice::Auto),
            "webgpu" | "gpu" => Some(Choice::WebGpu),
            "cpu" => Some(Choice::Cpu),
            "burn" => Some(Choice::Burn),
            _ => None,
        }
    }
}

/// The model uploaded to WebGPU; the [`GpuModel`] is taken out for a run and put back after.
pub struct GpuBackend {
    model: Arc<Model>,
    slot: Rc<RefCell<Option<GpuModel>>>,
    adapter: String,
    buffer_bytes: u64,
}

/// A loaded model on one compute backend.
pub enum Backend {
    /// `lm`'s CPU forward pass, compiled to wasm (quantized weights in wasm memory).
    Cpu(Arc<Model>),
    /// `lm::gpu`'s forward pass on WebGPU (quantized weights in GPU buffers).
    Gpu(GpuBackend),
    /// `lm::burn`'s program on burn's WebGPU backend (feature `burn-engine`).
    #[cfg(feature = "burn-engine")]
    Burn(BurnBackend),
}

/// The model on burn's WebGPU backend; the [`BurnModel`] is taken out for a run.
#[cfg(feature = "burn-engine")]
pub struct BurnBackend {
    model: Arc<Model>,
    slot: Rc<RefCell<Option<BurnModel>>>,
}

impl Backend {
    /// Parses a GGUF file's bytes and places the model by `choice`: on WebGPU when asked
    /// (or, for [`Choice::Auto`], when the adapter is not a software one), else on the CPU.
    /// A WebGPU failure under `Auto` (no device, or a model that does not fit its buffer
    /// limits or memory) falls back to the CPU with a note in `status`.
    /// `note` keeps a line the page shows after loading (why the CPU took the model).
    /// `adapter_hint` is the page's own description of the adapter (the browser's
    /// `GPUAdapterInfo` vendor and architecture), which wgpu does not pass on.
    pub async fn load(
        bytes: Vec<u8>,
        choice: Choice,
        adapter_hint: &str,
        status: &dyn Fn(&str),
        note: &dyn Fn(&str),
    ) -> Result<Backend, String> {
        let mut model = Model::from_bytes(bytes).map_err(|e| e.to_string())?;
        // A run leaves its KV caches to the next: the same prompt is not prefilled again.
        model.set_keep_caches(true);
        let model = Arc::new(model);
        if choice == Choice::Cpu {
            return Ok(Backend::Cpu(model));
        }
        if choice == Choice::Burn {
            return Backend::load_burn(model, status).await;
        }
        status("opening the WebGPU device");
        yield_now().await;
        #[allow(clippy::arc_with_non_send_sync)]
        let gpu = match lm::gpu::Gpu::new().await {
            Ok(g) => Arc::new(g),
            Err(e) if choice == Choice::Auto => {
                note(&format!(
                    "WebGPU unavailable ({e}); the model runs on the CPU (wasm)."
                ));
                return Ok(Backend::Cpu(model));
            }
            Err(e) => return Err(format!("WebGPU: {e}")),
        };
        let wgpu_name = gpu.adapter_name();
        let adapter = if wgpu_name.starts_with(' ') || wgpu_name.starts_with('(') {
            // The browser told wgpu no description: use the page's.
            adapter_hint.to_string()
        } else {
            format!("{adapter_hint} · {wgpu_name}")
        };
        if choice == Choice::Auto && (gpu.is_cpu() || is_software(&adapter)) {
            // A software adapter (SwiftShader): the wasm CPU path is faster.
            return Ok(Backend::Cpu(model));
        }
        status(&format!("uploading weights to {adapter}…"));
        yield_now().await;
        let g = match GpuModel::with_gpu(gpu, &model, lm::gpu::DEFAULT_GPU_CONTEXT).await {
            Ok(g) => g,
            // A model too large for the device's buffer limits (or its memory): under
            // `Auto` the CPU path takes it, and the status says why.
            Err(e) if choice == Choice::Auto => {
                note(&format!(
                    "The model does not fit on {adapter} ({e}); it runs on the CPU (wasm)."
                ));
                return Ok(Backend::Cpu(model));
            }
            Err(e) => return Err(format!("WebGPU ({adapter}): {e}")),
        };
        let buffer_bytes = g.buffer_bytes();
        status(&format!(
            "{adapter}: {} of GPU buffers",
            fmt_mb(buffer_bytes)
        ));
        Ok(Backend::Gpu(GpuBackend {
            model,
            slot: Rc::new(RefCell::new(Some(g))),
            adapter,
            buffer_bytes,
        }))
    }

    /// Uploads the model to burn's WebGPU backend (`?engine=burn`).
    #[cfg(feature = "burn-engine")]
    async fn load_burn(model: Arc<Model>, status: &dyn Fn(&str)) -> Result<Backend, String> {
        status("opening burn's WebGPU device");
        yield_now().await;
        let device = lm::burn::webgpu().await?;
        status("uploading weights to burn's WebGPU device…");
        yield_now().await;
        let m = BurnModel::new(model.clone(), device, "burn-webgpu");
        Ok(Backend::Burn(BurnBackend {
            model,
            slot: Rc::new(RefCell::new(Some(m))),
        }))
    }

    /// Without the `burn-engine` feature: says how to get it.
    #[cfg(not(feature = "burn-engine"))]
    async fn load_burn(_: Arc<Model>, _: &dyn Fn(&str)) -> Result<Backend, String> {
        Err(
            "?engine=burn needs a page built with the `burn-engine` feature \
             (`cargo xtask build --burn`); this one runs our own engine only"
                .into(),
        )
    }

    /// The model (header, configuration, tokenizer).
    pub fn model(&self) -> &Model {
        match self {
            Backend::Cpu(m) => m,
            Backend::Gpu(g) => &g.model,
            #[cfg(feature = "burn-engine")]
            Backend::Burn(b) => &b.model,
        }
    }

    /// Whether it runs on WebGPU.
    pub fn is_gpu(&self) -> bool {
        match self {
            Backend::Cpu(_) => false,
            Backend::Gpu(_) => true,
            // burn's WebGPU device lives on the page's thread too.
            #[cfg(feature = "burn-engine")]
            Backend::Burn(_) => true,
        }
    }

    /// Why the WebGPU device can no longer run the model, if so (see `Engine::gpu_failure`).
    pub fn gpu_failure(&self) -> Option<String> {
        let Backend::Gpu(g) = self else {
            return None;
        };
        let slot = g.slot.try_borrow().ok()?;
        slot.as_ref()?.gpu().check().err().map(|e| e.to_string())
    }

    /// Destroys the WebGPU device (see `Engine::lose_gpu_device`).
    pub fn lose_gpu_device(&self) -> bool {
        let Backend::Gpu(g) = self else {
            return false;
        };
        match g.slot.try_borrow() {
            Ok(slot) => match slot.as_ref() {
                Some(m) => {
                    m.gpu().device().destroy();
                    true
                }
                None => false,
            },
            Err(_) => false,
        }
    }

    /// Where it runs, for the page.
    pub fn name(&self) -> String {
        match self {
            Backend::Cpu(_) => "CPU (wasm)".into(),
            #[cfg(feature = "burn-engine")]
            Backend::Burn(_) => "burn on WebGPU (lm::burn)".into(),
            Backend::Gpu(g) => format!(
                "WebGPU ({}, {} of GPU buffers)",
                g.adapter,
                fmt_mb(g.buffer_bytes)
            ),
        }
    }

    /// The model conditioned on `prompt`, as the samplers see it; its forward passes fail
    /// with [`STOPPED`] once `stop` says so.
    pub fn conditioned(&self, prompt: Vec<TokenId>, stop: StopCheck) -> Result<BackendLm, LmError> {
        let inner: DynLm<'static> = match self {
            Backend::Cpu(m) => Box::new(FramePaced(PromptedModel::new(m.clone(), prompt)?)),
            Backend::Gpu(g) => {
                // A prompt the model cannot take is refused before the model is lent out,
                // so the slot keeps it for the next run.
                if let Some(m) = g.slot.borrow().as_ref() {
                    GpuPromptedModel::check_prompt(m, &prompt)?;
                }
                let model = g.slot.borrow_mut().take().ok_or_else(|| {
                    LmError("the GPU model was lost after an earlier error; reload the page".into())
                })?;
                if let Err(e) = model.gpu().check() {
                    return Err(LmError(format!("WebGPU failed: {e}")));
                }
                Box::new(Lent {
                    lm: Some(Box::new(GpuPromptedModel::new(model, prompt)?)),
                    slot: g.slot.clone(),
                    what: "WebGPU",
                })
            }
            #[cfg(feature = "burn-engine")]
            Backend::Burn(b) => {
                if let Some(m) = b.slot.borrow().as_ref() {
                    BurnPromptedModel::check_prompt(m, &prompt)?;
                }
                let model = b
                    .slot
                    .borrow_mut()
                    .take()
                    .ok_or_else(|| LmError("the burn model is in use by another run".into()))?;
                Box::new(Lent {
                    lm: Some(Box::new(BurnPromptedModel::new(model, prompt)?)),
                    slot: b.slot.clone(),
                    what: "burn (WebGPU)",
                })
            }
        };
        Ok(BackendLm { inner, stop })
    }
}

/// The GPU model lent out of the backend for one run; it goes back when the loan drops.
pub struct GpuLoan {
    /// Always `Some` until dropped.
    model: Option<GpuModel>,
    slot: Rc<RefCell<Option<GpuModel>>>,
}

impl GpuLoan {
    /// The lent model.
    pub fn model(&mut self) -> &mut GpuModel {
        self.model
            .as_mut()
            .expect("the GPU model is present until drop")
    }
}

impl Drop for GpuLoan {
    fn drop(&mut self) {
        if let Some(m) = self.model.take() {
            *self.slot.borrow_mut() = Some(m);
        }
    }
}

impl Backend {
    /// Lends the GPU model for a run that drives it directly (masked decoding on the GPU);
    /// `Ok(None)` on the CPU path.
    pub fn lend_gpu(&self) -> Result<Option<GpuLoan>, LmError> {
        let Backend::Gpu(g) = self else {
            return Ok(None);
        };
        let model = g.slot.borrow_mut().take().ok_or_else(|| {
            LmError("the GPU model was lost after an earlier error; reload the page".into())
        })?;
        let loan = GpuLoan {
            model: Some(model),
            slot: g.slot.clone(),
        };
        Ok(Some(loan))
    }
}

/// A conditioned model that yields to the browser before every forward pass, so the page
/// repaints each streamed token and Stop (Esc) takes effect before the next forward pass.
/// The model underneath is either backend's, behind sampler-core's one handle.
pub struct BackendLm {
    inner: DynLm<'static>,
    stop: StopCheck,
}

impl BackendLm {
    /// Fails with [`STOPPED`] once the user pressed Stop; yields to the browser first.
    async fn pause(&self) -> Result<(), LmError> {
        yield_now().await;
        if (self.stop)() {
            return Err(LmError(STOPPED.into()));
        }
        Ok(())
    }
}

impl LanguageModel for BackendLm {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    fn eos(&self) -> TokenId {
        self.inner.eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        self.pause().await?;
        self.inner.logprobs(prefix).await
    }

    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        self.pause().await?;
        self.inner.logprobs_batch(prefixes).await
    }

    fn forward_tokens(&self) -> u64 {
        self.inner.forward_tokens()
    }
}

/// The CPU model, its forward passes split at layer boundaries so frames keep coming.
struct FramePaced(PromptedModel);

impl LanguageModel for FramePaced {
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }

    fn eos(&self) -> TokenId {
        self.0.eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        self.0
            .logprobs_pausing(prefix, &mut FramePause::new())
            .await
    }

    /// SMC particles: one pass over every particle's new token.
    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        self.0
            .logprobs_batch_pausing(prefixes, &mut FramePause::new())
            .await
    }

    fn forward_tokens(&self) -> u64 {
        self.0.forward_tokens()
    }
}

/// A prompted model that gives its model back ([`GpuPromptedModel`], [`BurnPromptedModel`]).
trait Lendable: LanguageModel {
    /// The model underneath.
    type Model;
    /// Gives the model back.
    fn into_model(self) -> Self::Model;
}

impl Lendable for GpuPromptedModel {
    type Model = GpuModel;
    fn into_model(self) -> GpuModel {
        GpuPromptedModel::into_model(self)
    }
}

#[cfg(feature = "burn-engine")]
impl Lendable for BurnPromptedModel {
    type Model = BurnModel;
    fn into_model(self) -> BurnModel {
        BurnPromptedModel::into_model(self)
    }
}

/// A GPU model lent out of the backend for one run, conditioned on the prompt; the model
/// goes back to the backend's slot when this drops.
struct Lent<P: Lendable> {
    /// Always `Some` until dropped.
    lm: Option<Box<P>>,
    slot: Rc<RefCell<Option<P::Model>>>,
    /// The engine, in error messages.
    what: &'static str,
}

impl<P: Lendable> Lent<P> {
    fn lm(&self) -> &P {
        self.lm
            .as_ref()
            .expect("the GPU model is present until drop")
    }
}

impl<P: Lendable> Drop for Lent<P> {
    fn drop(&mut self) {
        if let Some(lm) = self.lm.take() {
            *self.slot.borrow_mut() = Some(lm.into_model());
        }
    }
}

impl<P: Lendable> LanguageModel for Lent<P> {
    fn vocab_size(&self) -> usize {
        self.lm().vocab_size()
    }

    fn eos(&self) -> TokenId {
        self.lm().eos()
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        let what = self.what;
        let m = self
            .lm
            .as_mut()
            .expect("the GPU model is present until drop");
        m.logprobs(prefix)
            .await
            .map_err(|e| LmError(format!("{what} failed: {}", e.0)))
    }

    fn forward_tokens(&self) -> u64 {
        self.lm().forward_tokens()
    }
}

/// Whether an adapter description names a CPU implementation of WebGPU/Vulkan.
fn is_software(adapter: &str) -> bool {
    let a = adapter.to_lowercase();
    [
        "swiftshader",
        "llvmpipe",
        "lavapipe",
        "software",
        "microsoft basic render",
    ]
    .iter()
    .any(|s| a.contains(s))
}
