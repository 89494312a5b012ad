//! How the HMM of `p-gcd-smc` is distilled and used: its size, the sequences it is fitted
//! to, EM, and the guide's floor, with the limits that keep its cost bounded.

use crate::SampleError;

/// How the HMM of `p-gcd-smc` is distilled and used (bounded, configurable cost).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HmmConfig {
    /// Hidden states H (emissions take H × V f64: 6.3 MB for H = 16 on a 49,152-token
    /// vocabulary).
    pub hidden_states: usize,
    /// Sequences sampled from the model for the fit (each one full generation). The
    /// distillation's cost is dominated by these `sequences × max_len` forward tokens at
    /// most (about 30 s at the defaults with SmolLM2-135M's CPU forward pass on two cores).
    pub sequences: usize,
    /// Most tokens per sampled sequence (also capped by `max_tokens`).
    pub max_len: usize,
    /// Baum–Welch iterations.
    pub em_iterations: usize,
    /// Dirichlet pseudo-count added to every expected count in the M-step (keeps every
    /// token possible in every hidden state).
    pub pseudo_count: f64,
    /// The least relative guide value an allowed token keeps in the proposal, in (0, 1].
    pub guide_floor: f64,
}

impl Default for HmmConfig {
    fn default() -> Self {
        HmmConfig {
            hidden_states: 16,
            sequences: 16,
            max_len: 16,
            em_iterations: 20,
            pseudo_count: 1e-3,
            guide_floor: 1e-6,
        }
    }
}

/// Largest HMM (emission, transition and initial tables of f64s) the distillation builds.
pub const MAX_HMM_BYTES: u64 = 1 << 30;

/// Most sequences the distillation samples: they are held in memory for every EM
/// iteration (64 MB of token ids at this many 16-token sequences), and on a real model each
/// is a generation of its own (a million take days on a CPU).
pub const MAX_HMM_SEQUENCES: usize = 1_000_000;

impl HmmConfig {
    /// Rejects settings the distillation cannot run with.
    pub fn validate(&self) -> Result<(), SampleError> {
        let bad = |m: &str| Err(SampleError::Unsupported(m.to_string()));
        if self.hidden_states == 0 {
            return bad("--hmm-states must be at least 1");
        }
        if self.sequences == 0 {
            return bad("--hmm-sequences must be at least 1");
        }
        if self.sequences > MAX_HMM_SEQUENCES {
            return bad(&format!(
                "--hmm-sequences must be at most {MAX_HMM_SEQUENCES}: the sequences are held in \
                 memory for the fit, and each is a generation of the model"
            ));
        }
        if self.max_len == 0 {
            return bad("the HMM's sequence length must be at least 1");
        }
        if !(self.pseudo_count >= 0.0 && self.pseudo_count.is_finite()) {
            return bad("the HMM's pseudo-count must be a finite number ≥ 0");
        }
        if !(self.guide_floor > 0.0 && self.guide_floor <= 1.0) {
            return bad("the guide floor must be in (0, 1]");
        }
        Ok(())
    }
}
