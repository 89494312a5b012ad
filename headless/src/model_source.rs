//! Where the language model comes from: a GGUF file, or one of the analytic toy models.

use crate::failure::{Failure, Result, fail};
use lm::burn::BurnModel;
use lm::gpu::{GpuModel, GpuOptions};
use lm::{Backend, Lender, Model, NoPause};
use sampler_core::toy::ToyModel;
use sampler_core::{DynLanguageModel, SampleRequest, TokenId, Vocabulary};
use std::sync::Arc;

/// How to load a model: `strait`'s model flags without the prompt (docs/cli.md).
#[derive(Clone, Debug)]
pub struct ModelSpec {
    /// A GGUF file's path, or a toy model's name (`toy:gsk`, …).
    pub model: String,
    /// Force the CPU forward pass.
    pub cpu: bool,
    /// Force the GPU (wgpu + WGSL), even on a software adapter.
    pub gpu: bool,
    /// `strait`, `burn` or `burn-flex`.
    pub engine: String,
    /// Activations of the CPU pass's quantized products.
    pub activations: lm::forward::Activations,
    /// What the GPU pass may use (an f16 KV cache, the output product folded into
    /// attention), granted where the adapter and the model allow it.
    pub gpu_options: GpuOptions,
    /// KV caches the GPU pass holds (SMC particles or rejection candidates in one pass,
    /// prefixes kept for the samplers that come back to them); 1 where a command scores
    /// one sequence.
    pub gpu_slots: usize,
}

impl ModelSpec {
    /// `model` with the defaults: a hardware GPU when present, else the CPU; our engine;
    /// f32 activations and KV cache.
    pub fn new(model: impl Into<String>) -> ModelSpec {
        ModelSpec {
            model: model.into(),
            cpu: false,
            gpu: false,
            engine: "strait".into(),
            activations: lm::forward::Activations::F32,
            gpu_options: GpuOptions::default(),
            gpu_slots: lm::gpu::DEFAULT_GPU_SLOTS,
        }
    }
}

/// A loaded model with the vocabulary its constraints are built over.
pub enum Source {
    /// A llama-architecture GGUF model on one engine (CPU, GPU or burn).
    Real(Backend),
    /// A toy model of `sampler_core::toy`'s registry (`toy:gsk`, `toy:random:SEED`,
    /// `toy:letters:N:SEED`).
    Toy(ToyModel),
    /// A model given as a function by the embedding program (Python's `FunctionModel`).
    Function(crate::function_model::FunctionModel),
}

impl Source {
    /// Loads what `spec` names.
    pub fn load(args: &ModelSpec) -> Result<Source> {
        if args.model.starts_with("toy:") {
            return ToyModel::parse(&args.model).map(Source::Toy).or_else(fail);
        }
        let mut model = Model::load(&args.model)?;
        model.set_activations(args.activations);
        let model = Arc::new(model);
        if args.engine != "strait" {
            let ours = args.activations != lm::forward::Activations::F32
                || args.gpu_options != GpuOptions::default();
            if args.cpu || args.gpu || ours {
                return fail(format!(
                    "--engine {}: --cpu, --gpu, --activations, --kv-cache and --fold-output \
                     choose how our own engine runs; the burn engine runs on its own device \
                     in f32",
                    args.engine
                ));
            }
            return Ok(Source::Real(open_burn(model, &args.engine)?));
        }
        Ok(Source::Real(match open_gpu(&model, args)? {
            Some(gpu) => Backend::Gpu(Lender::new(model, gpu, "GPU")),
            None => Backend::Cpu(model),
        }))
    }

    /// The vocabulary (byte string of every token) constraints are lifted over.
    pub fn vocabulary(&self) -> Vocabulary {
        match self {
            Source::Real(b) => b.model().tokenizer().vocabulary(),
            Source::Toy(t) => t.vocabulary(),
            Source::Function(f) => f.vocabulary(),
        }
    }

    /// The prompt's tokens, wrapped in the model's chat template when `chat` is set. A GGUF
    /// model needs a prompt; the toy models take none.
    pub fn prompt_tokens(&self, text: &str, chat: bool) -> Result<Vec<TokenId>> {
        match self {
            Source::Real(b) => {
                if text.is_empty() {
                    return fail(
                        "a prompt is required with a GGUF model (--prompt or --prompt-file)",
                    );
                }
                Ok(b.model().tokenizer().encode_prompt(text, chat)?)
            }
            Source::Function(_) if !text.is_empty() || chat => fail(
                "a FunctionModel holds its own context: give no prompt (the prefixes it is \
                 asked about are the generated tokens)",
            ),
            _ => Ok(Vec::new()),
        }
    }

    /// What a run needs beside the model: the prompt's tokens (see [`Source::prompt_tokens`])
    /// and the constraint `spec` names over this model's vocabulary (`format` as
    /// `--grammar-format`).
    pub fn prompt_and_constraint(
        &self,
        prompt: &str,
        chat: bool,
        spec: &crate::ConstraintSpec,
        format: Option<&str>,
    ) -> Result<(Vec<TokenId>, sampler_core::DynConstraint<'static>)> {
        let prompt = self.prompt_tokens(prompt, chat)?;
        Ok((prompt, crate::build(spec, format, &self.vocabulary())?))
    }

    /// [`Source::prompt_and_constraint`] for a [`SampleRequest`] (its constraint given as
    /// text: Python's and JavaScript's form).
    pub fn request_prompt_and_constraint(
        &self,
        request: &SampleRequest,
    ) -> Result<(Vec<TokenId>, sampler_core::DynConstraint<'static>)> {
        let (format, text) = request.constraint()?;
        let (spec, format) = if request.regex.is_some() {
            let spec = crate::ConstraintSpec {
                regex: Some(text.to_string()),
                ..crate::ConstraintSpec::default()
            };
            (spec, None)
        } else {
            let name = if request.json_schema.is_some() {
                "json_schema"
            } else {
                "grammar"
            };
            let spec = crate::ConstraintSpec {
                text: Some(text.to_string()),
                name: Some(name.into()),
                ..crate::ConstraintSpec::default()
            };
            (spec, format)
        };
        self.prompt_and_constraint(&request.prompt, request.chat, &spec, format)
    }

    /// Tokenizes a continuation (the text of `strait score`).
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>> {
        match self {
            Source::Real(b) => Ok(b.model().tokenizer().encode(text)?),
            _ => self
                .vocabulary()
                .encode_longest(text.as_bytes())
                .map_err(|e| crate::Failure(format!("{e} (a toy or function model's vocabulary)"))),
        }
    }
}

/// Calls `f` with the model conditioned on the prompt, whatever its concrete type.
pub fn with_lm<R>(
    source: &mut Source,
    prompt: Vec<TokenId>,
    f: impl FnOnce(&mut dyn DynLanguageModel) -> Result<R>,
) -> Result<R> {
    match source {
        Source::Real(b) => f(&mut b.lend::<NoPause>(prompt)?),
        Source::Toy(t) => f(&mut t.lm()),
        Source::Function(m) => f(&mut m.lm()),
    }
}

/// Uploads `model` to the burn engine `engine` names (`burn`: wgpu; `burn-flex`: CPU).
fn open_burn(model: Arc<Model>, engine: &str) -> Result<Backend> {
    let device = match engine {
        "burn-flex" => lm::burn::flex(),
        #[cfg(feature = "burn-wgpu")]
        _ => match lm::burn::wgpu() {
            Some(d) => d,
            None => return fail("--engine burn: burn's wgpu backend found no adapter"),
        },
        #[cfg(not(feature = "burn-wgpu"))]
        _ => {
            return fail(
                "--engine burn needs burn's wgpu backend, which this build leaves out: \
                 rebuild with `cargo build --release -p cli --features burn-wgpu`, or use \
                 --engine burn-flex (burn's CPU backend)",
            );
        }
    };
    let name = if engine == "burn" {
        "burn-wgpu"
    } else {
        "burn-flex"
    };
    let m = BurnModel::new(model.clone(), device, name);
    crate::note!("strait: model on the burn engine ({name})");
    Ok(Backend::Burn(Lender::new(model, m, name)))
}

/// Opens the GPU copy of `model` when the flags (or a hardware adapter) ask for it.
fn open_gpu(model: &Model, args: &ModelSpec) -> Result<Option<GpuModel>> {
    let asked = args.gpu_options;
    // The GPU-only flags given, as typed.
    let mut flags = Vec::new();
    if asked.cache != shaders::KvFormat::F32 {
        flags.push(format!("--kv-cache {}", asked.cache.name()));
    }
    if asked.fold_output {
        flags.push("--fold-output".to_string());
    }
    let flags = flags.join(" and ");
    if args.cpu {
        if !flags.is_empty() {
            return fail(format!("{flags}: the GPU pass's; --cpu runs the CPU pass"));
        }
        return Ok(None);
    }
    let on_cpu = || {
        if !flags.is_empty() {
            crate::note!("strait: {flags}: no hardware GPU, so the CPU pass runs");
        }
        Ok(None)
    };
    let gpu = match sampler_core::block_on(shaders::Gpu::new()) {
        Ok(g) => g,
        Err(e) if args.gpu => return fail(format!("--gpu: {e}")),
        Err(_) => return on_cpu(),
    };
    if gpu.is_cpu() && !args.gpu {
        // A software adapter (lavapipe) is slower than the CPU forward pass.
        return on_cpu();
    }
    let name = gpu.adapter_name();
    let m = sampler_core::block_on(GpuModel::with_options(
        Arc::new(gpu),
        model,
        lm::gpu::DEFAULT_GPU_CONTEXT,
        args.gpu_slots.max(1),
        asked,
    ))
    .map_err(|e| Failure(format!("GPU ({name}): {e}")))?;
    crate::note!(
        "strait: model on {name}: {:.1} MB of GPU buffers, {} KV cache{} of {}{}",
        m.buffer_bytes() as f64 / 1e6,
        m.slots(),
        if m.slots() == 1 { "" } else { "s" },
        m.kv_format().name(),
        match m.folds_output() {
            true => ", output products folded into attention",
            false => "",
        }
    );
    if m.kv_format() != asked.cache {
        crate::note!(
            "strait: --kv-cache {}: needs the adapter's shader-f16 and a model whose q, k, v \
             products fuse; the cache is f32",
            asked.cache.name()
        );
    }
    if asked.fold_output && !m.folds_output() {
        crate::note!(
            "strait: --fold-output: needs every block's gate and up matrices stacked (one type \
             the GPU reads as stored, not F32 or Q4_0), no output bias and heads of whole \
             32-column blocks up to 256 wide; the output product runs on its own"
        );
    }
    Ok(Some(m))
}
