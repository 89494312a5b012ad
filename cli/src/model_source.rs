//! Where the language model comes from: a GGUF file, or one of the analytic toy models.

use crate::args::ModelArgs;
use crate::failure::{Result, fail};
use lm::burn::{BurnModel, BurnPromptedModel};
use lm::gpu::{GpuModel, GpuPromptedModel};
use lm::{Model, PromptedModel};
use sampler_core::toy::{RandomLm, gsk_lm, gsk_vocabulary};
use sampler_core::{DynLanguageModel, TokenId, Vocabulary};
use std::sync::Arc;

/// A loaded model with the vocabulary its constraints are built over.
pub enum Source {
    /// A llama-architecture GGUF model, on the GPU when `gpu` is set.
    Real {
        /// The model (weights stay quantized in memory).
        model: Arc<Model>,
        /// The GPU copy of the model, when the run uses the GPU.
        gpu: Option<Box<GpuModel>>,
        /// The burn copy of the model, when the run uses the burn engine (`--engine`).
        burn: Option<Box<BurnModel>>,
    },
    /// `toy:gsk`: the skewed-grammar model of seed 004 over tokens `0`, `1`, EOS.
    Gsk,
    /// `toy:random:SEED`: a seeded random bigram model over tokens `a`, `b`, `ab`, `c`, EOS.
    Random(u64),
}

impl Source {
    /// Loads what `--model` names.
    pub fn load(args: &ModelArgs) -> Result<Source> {
        if args.model == "toy:gsk" {
            return Ok(Source::Gsk);
        }
        if let Some(seed) = args.model.strip_prefix("toy:random:") {
            return match seed.parse() {
                Ok(s) => Ok(Source::Random(s)),
                Err(_) => fail(format!("toy:random:SEED needs a number, got {seed:?}")),
            };
        }
        if args.model.starts_with("toy:") {
            return fail(format!(
                "unknown toy model {:?}; expected toy:gsk or toy:random:SEED",
                args.model
            ));
        }
        let mut model = Model::load(&args.model)?;
        model.set_activations(args.activations);
        let model = Arc::new(model);
        if args.engine != "strait" {
            if args.cpu || args.gpu || args.activations != lm::forward::Activations::F32 {
                return fail(format!(
                    "--engine {}: --cpu, --gpu and --activations choose how our own engine \
                     runs; the burn engine runs on its own device in f32",
                    args.engine
                ));
            }
            let burn = open_burn(&model, &args.engine)?;
            return Ok(Source::Real {
                model,
                gpu: None,
                burn: Some(Box::new(burn)),
            });
        }
        let gpu = open_gpu(&model, args)?;
        Ok(Source::Real {
            model,
            gpu,
            burn: None,
        })
    }

    /// The vocabulary (byte string of every token) constraints are lifted over.
    pub fn vocabulary(&self) -> Vocabulary {
        match self {
            Source::Real { model: m, .. } => m.tokenizer().vocabulary(),
            Source::Gsk => gsk_vocabulary(),
            Source::Random(_) => toy_random_vocabulary(),
        }
    }

    /// The prompt's tokens (`--prompt` or `--prompt-file`, chat-templated with `--chat`).
    pub fn prompt_tokens(&self, args: &ModelArgs) -> Result<Vec<TokenId>> {
        let text = match (&args.prompt, &args.prompt_file) {
            (Some(p), _) => p.clone(),
            (None, Some(f)) => std::fs::read_to_string(f)
                .map_err(|e| crate::failure::Failure(format!("{}: {e}", f.display())))?,
            (None, None) => String::new(),
        };
        match self {
            Source::Real { model: m, .. } => {
                if text.is_empty() {
                    return fail("--prompt (or --prompt-file) is required with a GGUF model");
                }
                Ok(m.tokenizer().encode_prompt(&text, args.chat)?)
            }
            _ => Ok(Vec::new()),
        }
    }

    /// Tokenizes a continuation (the text of `strait score`).
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>> {
        match self {
            Source::Real { model: m, .. } => Ok(m.tokenizer().encode(text)?),
            _ => {
                let vocab = self.vocabulary();
                greedy_encode(&vocab, text.as_bytes())
            }
        }
    }
}

/// The toy random model's vocabulary: `a`, `b`, `ab`, `c` and EOS (`ab` makes
/// non-canonical tokenizations possible).
pub fn toy_random_vocabulary() -> Vocabulary {
    let t = |s: &str| s.as_bytes().to_vec();
    Vocabulary::new(vec![t("a"), t("b"), t("ab"), t("c"), Vec::new()], 4, &[4])
}

/// Longest-match tokenization over a small vocabulary (toy models only).
fn greedy_encode(vocab: &Vocabulary, mut bytes: &[u8]) -> Result<Vec<TokenId>> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let best = (0..vocab.len() as TokenId)
            .filter(|&t| !vocab.is_special(t) && !vocab.bytes(t).is_empty())
            .filter(|&t| bytes.starts_with(vocab.bytes(t)))
            .max_by_key(|&t| vocab.bytes(t).len());
        match best {
            Some(t) => {
                out.push(t);
                bytes = &bytes[vocab.bytes(t).len()..];
            }
            None => {
                return fail(format!(
                    "the toy vocabulary cannot spell {:?}",
                    String::from_utf8_lossy(bytes)
                ));
            }
        }
    }
    Ok(out)
}

/// Calls `f` with the model conditioned on the prompt, whatever its concrete type.
pub fn with_lm<R>(
    source: &mut Source,
    prompt: Vec<TokenId>,
    f: impl FnOnce(&mut dyn DynLanguageModel) -> Result<R>,
) -> Result<R> {
    match source {
        Source::Real {
            burn: b @ Some(_), ..
        } => {
            let burn = *b.take().expect("matched Some");
            let mut lm = BurnPromptedModel::new(burn, prompt)?;
            let r = f(&mut lm);
            *b = Some(Box::new(lm.into_model()));
            r
        }
        Source::Real {
            gpu: g @ Some(_), ..
        } => {
            let gpu = *g.take().expect("matched Some");
            let mut lm = GpuPromptedModel::new(gpu, prompt)?;
            let r = f(&mut lm);
            *g = Some(Box::new(lm.into_model()));
            r
        }
        Source::Real { model: m, .. } => {
            let mut lm = PromptedModel::new(m.clone(), prompt)?;
            f(&mut lm)
        }
        Source::Gsk => f(&mut gsk_lm()),
        Source::Random(seed) => f(&mut RandomLm::new(5, 4, 1, *seed)),
    }
}

/// Uploads `model` to the burn engine `engine` names (`burn`: wgpu; `burn-flex`: CPU).
fn open_burn(model: &Arc<Model>, engine: &str) -> Result<BurnModel> {
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
        engine
    };
    let m = BurnModel::new(model.clone(), device, name);
    eprintln!("strait: model on the burn engine ({name})");
    Ok(m)
}

/// Opens the GPU copy of `model` when the flags (or a hardware adapter) ask for it.
fn open_gpu(model: &Model, args: &ModelArgs) -> Result<Option<Box<GpuModel>>> {
    if args.cpu {
        return Ok(None);
    }
    let gpu = match sampler_core::block_on(shaders::Gpu::new()) {
        Ok(g) => g,
        Err(e) if args.gpu => return fail(format!("--gpu: {e}")),
        Err(_) => return Ok(None),
    };
    if gpu.is_cpu() && !args.gpu {
        // A software adapter (lavapipe) is slower than the CPU forward pass.
        return Ok(None);
    }
    let name = gpu.adapter_name();
    let m = sampler_core::block_on(GpuModel::with_gpu(
        Arc::new(gpu),
        model,
        lm::gpu::DEFAULT_GPU_CONTEXT,
    ))
    .map_err(|e| crate::failure::Failure(format!("GPU ({name}): {e}")))?;
    eprintln!(
        "strait: model on {name}: {:.1} MB of GPU buffers",
        m.buffer_bytes() as f64 / 1e6
    );
    Ok(Some(Box::new(m)))
}
