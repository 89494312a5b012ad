//! The command-line contract of docs/cli.md, parsed with clap.

use clap::{Args, Parser, Subcommand};
use lm::forward::Activations;
use sampler_core::hmm::HmmConfig;
use sampler_core::request::defaults;
use std::path::PathBuf;

/// `strait`: faithful constrained sampling from a language model, headless.
#[derive(Parser, Debug)]
#[command(name = "strait", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Threads of the CPU forward pass (default: every core).
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: Option<u16>,
}

/// Parses `--activations`.
fn activations(s: &str) -> Result<Activations, String> {
    Activations::parse(s).ok_or_else(|| format!("expected `f32` or `q8`, got {s:?}"))
}

fn kv_cache(s: &str) -> Result<shaders::KvFormat, String> {
    shaders::KvFormat::parse(s).ok_or_else(|| format!("expected `f32` or `f16`, got {s:?}"))
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Draw samples from the model under a constraint with one of the samplers.
    Sample(SampleArgs),
    /// log P(text·EOS | prompt) under the model, with the tokens.
    Score(ScoreArgs),
    /// Exact P^L of a finite language: every token sequence with its probability.
    Enumerate(EnumerateArgs),
    /// Benchmarks that print figures side by side.
    Bench(BenchArgs),
    /// Run a plan's grid of sampler runs, keep each cell's samples, summarize and plot.
    Sweep(SweepArgs),
}

/// Arguments of `strait sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The plan (TOML): models, constraints, prompts, samplers, seeds, parameters.
    pub plan: PathBuf,
    /// The folder for the cells' samples, the summary and the plots (finished cells found
    /// there are kept).
    #[arg(long)]
    pub out: PathBuf,
    /// Run the models with the CPU forward pass.
    #[arg(long, conflicts_with = "gpu")]
    pub cpu: bool,
    /// Run the models on the GPU even on a software adapter.
    #[arg(long)]
    pub gpu: bool,
    /// Run nothing: write the summary, the tables and the plots of the cells finished so
    /// far (while a long sweep still runs elsewhere, or after it was stopped).
    #[arg(long)]
    pub summarize: bool,
}

/// Where the model comes from and what it is conditioned on.
#[derive(Args, Debug, Clone)]
pub struct ModelArgs {
    /// Path to a llama-architecture GGUF file, or `toy:gsk` / `toy:random:SEED` /
    /// `toy:letters:N:SEED` for the analytic models.
    #[arg(long)]
    pub model: String,
    /// The prompt text (raw unless --chat).
    #[arg(long, conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// Read the prompt from a file.
    #[arg(long)]
    pub prompt_file: Option<PathBuf>,
    /// Wrap the prompt in the model's chat template.
    #[arg(long)]
    pub chat: bool,
    /// Run the model with the CPU forward pass.
    #[arg(long, conflicts_with = "gpu")]
    pub cpu: bool,
    /// Run the model on the GPU (wgpu + WGSL) even when the only adapter is a software
    /// rasterizer such as Mesa's lavapipe. Without `--cpu` or `--gpu`, a hardware GPU is
    /// used when there is one, the CPU forward pass otherwise.
    #[arg(long)]
    pub gpu: bool,
    /// The forward pass's engine: `strait` (ours: the CPU pass, or our WGSL on the GPU as
    /// `--cpu` / `--gpu` say), `burn` (the same pass as a burn program on burn's wgpu
    /// backend, quantized matrices through our WGSL; needs a build with `--features burn-wgpu`) or
    /// `burn-flex` (the burn program on burn's CPU backend, weights decoded to f32).
    #[arg(long, default_value = "strait", value_parser = ["strait", "burn", "burn-flex"])]
    pub engine: String,
    /// Activations of the CPU forward pass's quantized products: `f32` (exact up to f32
    /// rounding) or `q8` (8 bits per block of 32 and integer dot products, as llama.cpp:
    /// faster; measured on SmolLM2: KL 7e-3 nats a position, 0.4 nats on likely tokens).
    #[arg(long, default_value = "f32", value_parser = activations)]
    pub activations: Activations,
    /// What the GPU forward pass may use.
    #[command(flatten)]
    pub gpu_args: GpuArgs,
}

/// The GPU forward pass's options (`--kv-cache`, `--fold-output`), for the model flags
/// and `strait bench gpu`.
#[derive(Args, Debug, Clone, Copy)]
pub struct GpuArgs {
    /// Keys and values in the GPU forward pass's KV cache: `f32`, or `f16` where the
    /// adapter has `shader-f16` (half the cache's memory and reads; measured on SmolLM2:
    /// logits up to 0.04 from the CPU pass's, against 1e-4 with f32).
    #[arg(long, default_value = "f32", value_parser = kv_cache)]
    pub kv_cache: shaders::KvFormat,
    /// Fold each block's output product into the GPU pass's attention: four dispatches a
    /// block instead of five, each head's share of the product added by the next two
    /// products (where the model's layout allows it). The gate/up product then reads its
    /// input once per head plus once: slower the more heads a model has
    /// (docs/bench/gpu-forward.md).
    #[arg(long)]
    pub fold_output: bool,
}

impl GpuArgs {
    /// The library's form of these flags.
    pub fn options(&self) -> lm::gpu::GpuOptions {
        lm::gpu::GpuOptions {
            cache: self.kv_cache,
            fold_output: self.fold_output,
        }
    }
}

impl ModelArgs {
    /// How to load the model (the library's form of these flags).
    pub fn spec(&self) -> headless::ModelSpec {
        headless::ModelSpec {
            model: self.model.clone(),
            cpu: self.cpu,
            gpu: self.gpu,
            engine: self.engine.clone(),
            activations: self.activations,
            gpu_options: self.gpu_args.options(),
            gpu_slots: lm::gpu::DEFAULT_GPU_SLOTS,
        }
    }

    /// The prompt's text: `--prompt`, the file of `--prompt-file`, or empty.
    pub fn prompt_text(&self) -> headless::Result<String> {
        match (&self.prompt, &self.prompt_file) {
            (Some(p), _) => Ok(p.clone()),
            (None, Some(f)) => std::fs::read_to_string(f)
                .map_err(|e| headless::Failure(format!("{}: {e}", f.display()))),
            (None, None) => Ok(String::new()),
        }
    }
}

/// The constraint: exactly one of a grammar file, a regex or a JSON Schema file.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct ConstraintArgs {
    /// A grammar file (.lark, .gbnf, .ebnf, .regex, .json).
    #[arg(long)]
    pub grammar: Option<PathBuf>,
    /// A regular expression the whole output must match.
    #[arg(long)]
    pub regex: Option<String>,
    /// A JSON Schema file.
    #[arg(long)]
    pub json_schema: Option<PathBuf>,
}

impl ConstraintArgs {
    /// The library's form of these flags.
    pub fn spec(&self) -> headless::ConstraintSpec {
        headless::ConstraintSpec {
            grammar: self.grammar.clone(),
            regex: self.regex.clone(),
            json_schema: self.json_schema.clone(),
            ..headless::ConstraintSpec::default()
        }
    }
}

/// Arguments of `strait sample`.
#[derive(Args, Debug)]
pub struct SampleArgs {
    /// Model and prompt.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The constraint.
    #[command(flatten)]
    pub constraint: ConstraintArgs,
    /// Grammar format when the file extension does not say it.
    #[arg(long)]
    pub grammar_format: Option<String>,
    /// The sampler (auto, lm, rs, ars, rsft, cars, lcd, gcd-budget, asap, mcmc-*, *-smc, ...;
    /// auto: exact CARS while it is cheap, else weighted SMC, saying which and why).
    #[arg(long)]
    pub method: String,
    /// How many samples, chains or SMC runs (see docs/cli.md).
    #[arg(long, default_value_t = defaults::N)]
    pub n: usize,
    /// MCMC steps per chain (K = 1 is the initial GCD sample).
    #[arg(long, default_value_t = defaults::STEPS)]
    pub steps: usize,
    /// SMC particles.
    #[arg(long, default_value_t = defaults::PARTICLES)]
    pub particles: usize,
    /// Rejection samplers (rs, sample-verify, ars, rsft, cars): generations drawn in
    /// lockstep, their model calls batched and their trie updates applied after the batch
    /// in order (still exact; 1 = one at a time, each seeing every earlier one's updates).
    /// MCMC: chains run side by side, their generations in lockstep (each chain unchanged).
    #[arg(long, default_value_t = defaults::BATCH)]
    pub batch: usize,
    /// Exact samplers give up after this many generations in a row without a valid one.
    #[arg(long, default_value_t = defaults::MAX_GENERATIONS)]
    pub max_generations: u64,
    /// Exact samplers stop after this many generations in all, keeping the samples found
    /// (the papers' cap on attempts).
    #[arg(long)]
    pub generation_cap: Option<u64>,
    /// Maximum generated tokens per sequence (EOS included). It is part of the target: the
    /// exact samplers draw from P restricted to valid sequences of at most this many
    /// tokens, so a tokenization that needs more is outside it.
    #[arg(long, default_value_t = defaults::MAX_TOKENS)]
    pub max_tokens: usize,
    /// Seed of every random choice.
    #[arg(long, default_value_t = defaults::SEED)]
    pub seed: u64,
    /// Also write every sampler event as a JSON line.
    #[arg(long)]
    pub events: bool,
    /// p-gcd-smc: hidden states of the HMM distilled from the model.
    #[arg(long, default_value_t = HmmConfig::default().hidden_states)]
    pub hmm_states: usize,
    /// p-gcd-smc: sequences sampled from the model to fit the HMM.
    #[arg(long, default_value_t = HmmConfig::default().sequences)]
    pub hmm_sequences: usize,
    /// p-gcd-smc: Baum–Welch (EM) iterations.
    #[arg(long, default_value_t = HmmConfig::default().em_iterations)]
    pub hmm_iterations: usize,
    /// p-gcd-smc: where the HMM's EM steps and guide table run: `burn-flex` (burn's CPU
    /// backend, f64; the page's too), `cpu` (the f64 loops of sampler-core, the reference),
    /// `burn-flex-f32`, `burn-wgpu` (f32; built with `--features burn-wgpu`, needs an
    /// adapter). `strait bench hmm` times them.
    #[arg(long, default_value = defaults::HMM_ENGINE)]
    pub hmm_engine: String,
}

/// Arguments of `strait score`.
#[derive(Args, Debug)]
pub struct ScoreArgs {
    /// Model and prompt.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The continuation to score (EOS is appended).
    #[arg(long)]
    pub text: String,
}

/// Arguments of `strait enumerate`.
#[derive(Args, Debug)]
pub struct EnumerateArgs {
    /// Model and prompt.
    #[command(flatten)]
    pub model: ModelArgs,
    /// The constraint.
    #[command(flatten)]
    pub constraint: ConstraintArgs,
    /// Grammar format when the file extension does not say it.
    #[arg(long)]
    pub grammar_format: Option<String>,
    /// Longest token sequence considered (EOS included).
    #[arg(long, default_value_t = 16)]
    pub max_tokens: usize,
}

/// Arguments of `strait bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// What to measure: `decode`, `faithful` (every real-model example's samplers, time
    /// split into model, checks, masks and the rest), `gpu` (the wgpu engine's decode, `--profile` per kernel), `masks`, `samplers`, `smc`, `hmm`, `kernels` (the fused
    /// CPU kernels beside decode-then-dot) or `rejection` (rejection samplers in batches).
    pub what: String,
    /// The model file.
    #[arg(long, default_value = "assets/models/SmolLM2-135M-Instruct.Q4_1.gguf")]
    pub model: String,
    /// Tokens to decode.
    #[arg(long, default_value_t = 32)]
    pub tokens: usize,
    /// Also write the report to this file (`samplers`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Activations of the CPU forward pass (`decode` measures both unless given).
    #[arg(long, value_parser = activations)]
    pub activations: Option<Activations>,
    /// `decode`: only these engines, comma-separated (default: all of them).
    #[arg(long, value_delimiter = ',', value_parser = ["strait-cpu", "strait-wgpu", "burn-flex", "burn-wgpu", "llama.cpp"])]
    pub engines: Vec<String>,
    /// `gpu`: each kernel's GPU time per token from timestamp queries.
    #[arg(long)]
    pub profile: bool,
    /// `gpu`: also decode this many sequences side by side (as SMC particles), in one pass
    /// a step and one pass per sequence, and print both rates.
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// `gpu`: positions before decoding starts (the short prompt repeated; default: the
    /// prompt alone, 10 tokens for SmolLM2).
    #[arg(long)]
    pub context: Option<usize>,
    /// `gpu`: what the GPU pass may use (`--kv-cache`, `--fold-output`).
    #[command(flatten)]
    pub gpu_args: GpuArgs,
    /// `faithful`: only these examples (the page's ids, comma-separated; default: every
    /// real-model example).
    #[arg(long, value_delimiter = ',')]
    pub examples: Vec<String>,
    /// `faithful`: only these samplers (comma-separated; default: lcd, auto, cars,
    /// awrs-smc, smc-gcd).
    #[arg(long, value_delimiter = ',')]
    pub methods: Vec<String>,
    /// `faithful`: samples (SMC runs, MCMC chains) per sampler.
    #[arg(long, default_value_t = 10)]
    pub n: usize,
    /// `faithful`: seconds after which a run is stopped (its row then says T.O.).
    #[arg(long, default_value_t = 120.0)]
    pub budget_s: f64,
    /// `faithful`: particles of each SMC run (default: the samplers' own, as `sample`'s).
    #[arg(long)]
    pub particles: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use sampler_core::SampleRequest;

    /// Every field of the request Python and JavaScript read is a flag of `strait sample`
    /// (`max_tokens` → `--max-tokens`), so an option added to the request and not here fails.
    #[test]
    fn every_request_field_is_a_sample_flag() {
        let cli = Cli::command();
        let sample = cli.find_subcommand("sample").expect("strait sample");
        let flags: Vec<String> = sample
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect();
        for field in SampleRequest::field_names() {
            let flag = field.replace('_', "-");
            assert!(
                flags.contains(&flag),
                "--{flag} (SampleRequest::{field}) is not a flag of strait sample: {flags:?}"
            );
        }
    }

    /// The flags' defaults are the request's.
    #[test]
    fn sample_defaults_are_the_requests() {
        let Cli {
            command: Command::Sample(a),
            ..
        } = Cli::parse_from([
            "strait", "sample", "--model", "toy:gsk", "--regex", "a", "--method", "cars",
        ])
        else {
            panic!("strait sample");
        };
        let d = SampleRequest::default();
        assert_eq!(
            (
                a.n,
                a.seed,
                a.max_tokens,
                a.particles,
                a.steps,
                a.batch,
                a.max_generations,
                a.generation_cap,
                a.hmm_engine.as_str()
            ),
            (
                d.n,
                d.seed,
                d.max_tokens,
                d.particles,
                d.steps,
                d.batch,
                d.max_generations,
                d.generation_cap,
                d.hmm_engine.as_str()
            )
        );
    }
}
