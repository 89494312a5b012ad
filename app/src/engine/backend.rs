//! Where the network runs. The page talks to [`Backend`] only, so a GPU forward pass is one
//! more variant here (and one more model behind [`BackendLm`]'s handle) rather than a change
//! to the samplers or the UI.

use super::auto;
use super::browser_turn::{FramePause, yield_now};
use super::request::StopCheck;
use super::yielding::Yielding;
use crate::format::fmt_mb;
use lm::backend::EngineLoan;
use lm::gpu::GpuModel;
use lm::{Lender, Model};
use sampler_core::{DynLm, LmError, TokenId};
use std::sync::Arc;

/// KV caches the page's GPU model holds: up to this many SMC particles or rejection
/// candidates run in one pass (half the command line's, for the memory of phones and
/// laptops: 4 × 94 MB on SmolLM2).
const PAGE_GPU_SLOTS: usize = 4;

/// Which backend the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// On a hardware WebGPU adapter, whichever of WebGPU and the CPU path decodes faster
    /// there (timed once per adapter and model, remembered: [`super::auto`]); the CPU path
    /// on a software adapter, where it is always faster.
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

/// Where [`Backend::place`] puts the model, decided before the model is read.
pub enum Place {
    /// The CPU forward pass in wasm.
    Cpu,
    /// burn's WebGPU backend (`?engine=burn`).
    Burn,
    /// The WebGPU device opened, with its adapter's description.
    Gpu {
        /// The device.
        gpu: Arc<lm::gpu::Gpu>,
        /// The adapter, as the page says it.
        adapter: String,
    },
}

/// A loaded model on one compute backend: `lm`'s [`lm::Backend`] (which holds exactly one
/// engine and lends it to each run), with what the page says about it.
pub struct Backend {
    inner: lm::Backend,
    /// The WebGPU adapter's description and the model's GPU buffers, on WebGPU.
    adapter: Option<(String, u64)>,
}

impl Backend {
    /// Parses a GGUF file's bytes and places the model by `choice`: on WebGPU when asked
    /// (or, for [`Choice::Auto`], when the adapter is a hardware one and decodes faster than
    /// the CPU path there), else on the CPU. A WebGPU failure under `Auto` (no device, a
    /// kernel the adapter does not compile, a model that does not fit its buffer limits or
    /// memory, an error while timing) falls back to the CPU with a note.
    /// `note` keeps a line the page shows after loading (which path `auto` chose and why,
    /// or why the CPU took the model).
    /// `adapter_hint` is the page's own description of the adapter (the browser's
    /// `GPUAdapterInfo` vendor and architecture), which wgpu does not pass on.
    pub async fn load(
        bytes: Vec<u8>,
        choice: Choice,
        adapter_hint: &str,
        status: &dyn Fn(&str),
        note: &dyn Fn(&str),
    ) -> Result<Backend, String> {
        let place = Backend::place(choice, adapter_hint, status, note).await?;
        Backend::load_placed(bytes, choice, place, status, note).await
    }

    /// The first half of [`Backend::load`], which needs no model: the CPU for
    /// [`Choice::Cpu`], burn for [`Choice::Burn`], else the WebGPU device (under `Auto`,
    /// the CPU where there is none or it is a software adapter, with a note).
    pub async fn place(
        choice: Choice,
        adapter_hint: &str,
        status: &dyn Fn(&str),
        note: &dyn Fn(&str),
    ) -> Result<Place, String> {
        match choice {
            Choice::Cpu => return Ok(Place::Cpu),
            Choice::Burn => return Ok(Place::Burn),
            Choice::Auto | Choice::WebGpu => {}
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
                return Ok(Place::Cpu);
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
        if choice == Choice::Auto
            && (gpu.is_cpu() || lm::gpu::Gpu::is_software_name(&adapter))
            && !auto::Hooks::read().hardware
        {
            // A software adapter (SwiftShader): the wasm CPU path is faster.
            return Ok(Place::Cpu);
        }
        Ok(Place::Gpu { gpu, adapter })
    }

    /// The second half of [`Backend::load`]: the model on the place [`Backend::place`]
    /// chose (on WebGPU under `Auto`, timed against the CPU unless remembered).
    pub async fn load_placed(
        bytes: Vec<u8>,
        choice: Choice,
        place: Place,
        status: &dyn Fn(&str),
        note: &dyn Fn(&str),
    ) -> Result<Backend, String> {
        let mut model = Model::from_bytes(bytes).map_err(|e| e.to_string())?;
        // A run leaves its KV caches to the next: the same prompt is not prefilled again.
        model.set_keep_caches(true);
        let model = Arc::new(model);
        let cpu = |model| Backend {
            inner: lm::Backend::Cpu(model),
            adapter: None,
        };
        let (gpu, adapter) = match place {
            Place::Cpu => return Ok(cpu(model)),
            Place::Burn => return Backend::load_burn(model, status).await,
            Place::Gpu { gpu, adapter } => (gpu, adapter),
        };
        let hooks = auto::Hooks::read();
        // A timing remembered from an earlier visit decides before anything is uploaded.
        let key = auto::key(&adapter, &model);
        let remembered = match choice {
            Choice::Auto => auto::recall(&key),
            _ => None,
        };
        if let Some(t) = remembered.filter(|t| !t.gpu_wins()) {
            note(&t.explain(&adapter, true));
            return Ok(cpu(model));
        }
        status(&format!("uploading weights to {adapter}…"));
        yield_now().await;
        let uploaded = match hooks.break_gpu {
            // The test hook: a kernel that does not compile, as a driver might refuse ours.
            true => gpu
                .pipeline("broken on purpose", "fn main( {")
                .await
                .and_then(|_| {
                    Err(lm::gpu::GpuError::Validation(
                        "WGSL that does not parse compiled".into(),
                    ))
                }),
            false => {
                let ctx = lm::gpu::DEFAULT_GPU_CONTEXT;
                GpuModel::with_slots(gpu.clone(), &model, ctx, PAGE_GPU_SLOTS).await
            }
        };
        let mut g = match uploaded {
            Ok(g) => g,
            // A kernel the adapter does not compile or validate, or a model too large for
            // its buffer limits (or memory): under `Auto` the CPU path takes it, and the
            // page says why.
            Err(e) if choice == Choice::Auto => {
                gpu.device().destroy();
                note(&format!(
                    "WebGPU could not run the model on {adapter} ({}); it runs on the CPU (wasm).",
                    first_line(&e.to_string())
                ));
                return Ok(cpu(model));
            }
            Err(e) => return Err(format!("WebGPU ({adapter}): {e}")),
        };
        if choice == Choice::Auto {
            match remembered {
                Some(t) => note(&t.explain(&adapter, true)),
                None => match Backend::time_both(&mut g, &model, &adapter, &hooks, status).await {
                    Ok(t) => {
                        auto::remember(&key, &t);
                        note(&t.explain(&adapter, false));
                        if !t.gpu_wins() {
                            // The device's buffers go now, not whenever the browser collects.
                            g.gpu().device().destroy();
                            return Ok(cpu(model));
                        }
                    }
                    Err(Failed::Gpu(e)) => {
                        g.gpu().device().destroy();
                        note(&format!(
                            "WebGPU failed while timing it on {adapter} ({}); the model runs on the CPU (wasm).",
                            first_line(&e.to_string())
                        ));
                        return Ok(cpu(model));
                    }
                    Err(Failed::Cpu(e)) => note(&format!(
                        "The CPU path failed while timing it ({}); the model runs on WebGPU ({adapter}).",
                        first_line(&e.to_string())
                    )),
                },
            }
        }
        let buffer_bytes = g.buffer_bytes();
        status(&format!(
            "{adapter}: {} of GPU buffers",
            fmt_mb(buffer_bytes)
        ));
        Ok(Backend {
            inner: lm::Backend::Gpu(Lender::new(model, g, "WebGPU")),
            adapter: Some((adapter, buffer_bytes)),
        })
    }

    /// `auto`'s timing of both paths on a few tokens (the status says so meanwhile).
    async fn time_both(
        g: &mut GpuModel,
        model: &Model,
        adapter: &str,
        hooks: &auto::Hooks,
        status: &dyn Fn(&str),
    ) -> Result<auto::Timing, Failed> {
        status(&format!(
            "timing WebGPU ({adapter}) against the CPU on a few tokens (once for this device and model)…"
        ));
        yield_now().await;
        let prompt = auto::prompt(model).map_err(Failed::Cpu)?;
        let gpu_ms = auto::time_gpu(g, &prompt).await.map_err(Failed::Gpu)?;
        yield_now().await;
        let cpu_ms = auto::time_cpu(model, &prompt, hooks)
            .await
            .map_err(Failed::Cpu)?;
        Ok(auto::Timing { gpu_ms, cpu_ms })
    }

    /// Uploads the model to burn's WebGPU backend (`?engine=burn`).
    #[cfg(feature = "burn-engine")]
    async fn load_burn(model: Arc<Model>, status: &dyn Fn(&str)) -> Result<Backend, String> {
        status("opening burn's WebGPU device");
        yield_now().await;
        let device = lm::burn::webgpu().await?;
        status("uploading weights to burn's WebGPU device…");
        yield_now().await;
        let m = lm::burn::BurnModel::new(model.clone(), device, "burn-webgpu");
        Ok(Backend {
            inner: lm::Backend::Burn(Lender::new(model, m, "burn (WebGPU)")),
            adapter: None,
        })
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

    /// The lead's share of a model split by rows between the sampling workers
    /// (`worker/split.rs`), on the CPU.
    pub fn cpu_share(
        header: lm::ModelHeader,
        share: lm::shard::ShardFile,
    ) -> Result<Backend, String> {
        let mut model = Model::from_shard(header, share).map_err(|e| e.to_string())?;
        model.set_keep_caches(true);
        Ok(Backend {
            inner: lm::Backend::Cpu(Arc::new(model)),
            adapter: None,
        })
    }

    /// The model (header, configuration, tokenizer).
    pub fn model(&self) -> &Model {
        self.inner.model()
    }

    /// Whether it runs on WebGPU.
    pub fn is_gpu(&self) -> bool {
        // burn's WebGPU device lives on the page's thread too.
        !matches!(self.inner, lm::Backend::Cpu(_))
    }

    /// Why the WebGPU device can no longer run the model, if so (see `Engine::gpu_failure`).
    pub fn gpu_failure(&self) -> Option<String> {
        let lm::Backend::Gpu(g) = &self.inner else {
            return None;
        };
        g.with_engine(|m| m.gpu().check().err().map(|e| e.to_string()))
            .flatten()
    }

    /// Destroys the WebGPU device (see `Engine::lose_gpu_device`).
    pub fn lose_gpu_device(&self) -> bool {
        let lm::Backend::Gpu(g) = &self.inner else {
            return false;
        };
        g.with_engine(|m| m.gpu().device().destroy()).is_some()
    }

    /// Where it runs, for the page.
    pub fn name(&self) -> String {
        match (&self.inner, &self.adapter) {
            (lm::Backend::Cpu(_), _) => "CPU (wasm)".into(),
            (lm::Backend::Gpu(_), Some((adapter, bytes))) => {
                format!("WebGPU ({adapter}, {} of GPU buffers)", fmt_mb(*bytes))
            }
            _ => "burn on WebGPU (lm::burn)".into(),
        }
    }

    /// The model conditioned on `prompt`, as the samplers see it; its calls end once `stop`
    /// says so. A prompt the engine cannot take is refused
    /// before a GPU engine is lent out, so the backend keeps it for the next run.
    pub fn conditioned(&self, prompt: Vec<TokenId>, stop: StopCheck) -> Result<BackendLm, LmError> {
        let inner: DynLm<'static> = Box::new(self.inner.lend::<FramePause>(prompt)?);
        Ok(Yielding::every_call(inner, stop))
    }

    /// Lends the GPU model for a run that drives it directly (masked decoding on the GPU);
    /// `Ok(None)` on the CPU path. It goes back when the loan drops.
    pub fn lend_gpu(&self) -> Result<Option<GpuLoan>, LmError> {
        let lm::Backend::Gpu(g) = &self.inner else {
            return Ok(None);
        };
        g.lend_engine().map(Some)
    }
}

/// The GPU model lent out of the backend for one run.
pub type GpuLoan = EngineLoan<GpuModel>;

/// Which path failed while `auto` timed them.
enum Failed {
    Gpu(LmError),
    Cpu(LmError),
}

/// A conditioned model as the page's samplers get it: the backend's loan behind
/// sampler-core's one handle, giving the browser a turn before every forward pass.
pub type BackendLm = Yielding<DynLm<'static>>;

/// The first line of a message (a shader compiler's report runs to many), marked `…` where
/// lines were left out.
fn first_line(message: &str) -> String {
    let mut lines = message.trim().lines();
    let first = lines.next().unwrap_or_default().trim_end();
    match lines.next() {
        Some(_) => format!("{first} …"),
        None => first.to_string(),
    }
}
