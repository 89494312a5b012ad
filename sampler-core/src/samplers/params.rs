//! Run parameters shared by every sampler.

use crate::SampleError;
use crate::hmm::HmmConfig;

/// Most SMC particles one run may have (each holds a sequence and a constraint state).
pub const MAX_PARTICLES: usize = 100_000;

/// How SMC resamples when the effective sample size falls below the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Resampling {
    /// Independent draws proportional to the weights.
    Multinomial,
    /// One uniform per stratum of width 1/M.
    Stratified,
}

/// The knobs of a run (`--n`, `--steps`, `--particles`, `--max-tokens`, ...).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Params {
    /// Samples, chains or SMC runs to produce (see docs/cli.md for what it counts).
    pub n: usize,
    /// MCMC steps per chain (K = 1 is the initial GCD sample alone).
    pub steps: usize,
    /// SMC particles per run.
    pub particles: usize,
    /// Most tokens in one sequence, EOS included; a sequence that reaches it without EOS is invalid.
    pub max_tokens: usize,
    /// SMC resamples when ESS < `ess_threshold` · M.
    pub ess_threshold: f64,
    /// SMC resampling scheme.
    pub resampling: Resampling,
    /// Give up an exact sampler after this many full generations without a valid sample
    /// (then "the constraint has probability zero under the model").
    pub max_generations: u64,
    /// Stop an exact sampler once it has drawn this many generations in all,
    /// keeping the samples found (the papers' cap on attempts; `None`: no cap).
    #[serde(default)]
    pub generation_cap: Option<u64>,
    /// How many of the most likely tokens each `Token` event lists.
    pub top_k_events: usize,
    /// The HMM of `p-gcd-smc`: how it is distilled from the model and how it guides.
    pub hmm: HmmConfig,
    /// Rejection samplers (`rs` … `cars`): generations drawn in lockstep, their model calls
    /// batched and their changes to the trie applied after the batch, in order. 1 is one
    /// generation at a time, each seeing every earlier one's changes. MCMC: chains run this
    /// many at a time, their generations in lockstep.
    #[serde(default = "one")]
    pub batch: usize,
}

/// [`Params::batch`]'s default (permalinks made before it existed).
fn one() -> usize {
    1
}

/// Most generations in one rejection-sampler batch.
pub const MAX_BATCH: usize = 64;

impl Default for Params {
    fn default() -> Self {
        Params {
            n: 1,
            steps: 10,
            particles: 8,
            max_tokens: 64,
            ess_threshold: 0.5,
            resampling: Resampling::Multinomial,
            max_generations: 10_000,
            generation_cap: None,
            top_k_events: 5,
            hmm: HmmConfig::default(),
            batch: 1,
        }
    }
}

impl Params {
    /// Rejects parameters no method can run with (`--n 0`, `--particles 0`, ...).
    pub fn validate(&self) -> Result<(), SampleError> {
        let bad = |m: &str| Err(SampleError::Unsupported(m.to_string()));
        if self.n == 0 {
            return bad("--n must be at least 1");
        }
        if self.steps == 0 {
            return bad("--steps must be at least 1");
        }
        if self.particles == 0 {
            return bad("--particles must be at least 1");
        }
        if self.particles > MAX_PARTICLES {
            return Err(SampleError::Unsupported(format!(
                "--particles must be at most {MAX_PARTICLES}"
            )));
        }
        if !(1..=MAX_BATCH).contains(&self.batch) {
            return Err(SampleError::Unsupported(format!(
                "--batch must be between 1 and {MAX_BATCH}"
            )));
        }
        if self.generation_cap == Some(0) {
            return bad("--generation-cap must be at least 1");
        }
        if self.max_tokens == 0 {
            return bad("--max-tokens must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.ess_threshold) {
            return bad("the ESS threshold must be between 0 and 1");
        }
        Ok(())
    }
}
