//! Why a sampling run ended without a sample.

use crate::LmError;

/// Why a sampler stopped without producing what was asked.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleError {
    /// The language model failed (GPU lost, context too long, ...).
    Lm(LmError),
    /// Every token was masked at some step; `prefix` is the text generated so far.
    DeadEnd {
        /// The decoded text before the dead end.
        prefix: String,
    },
    /// An exact sampler proved that the constraint has probability zero under the model
    /// within `max_tokens` (its trie's root mass reached 0).
    ZeroProbability,
    /// An exact sampler found no valid sample in `generations` generations in a row
    /// (`max_generations`): the probability may be zero, or only too small for the method.
    GaveUp {
        /// Generations tried since the last valid sample.
        generations: u64,
    },
    /// An exact sampler drew its `generation_cap` generations in all before it had every
    /// sample asked for (the papers' budget of attempts); the samples found are kept.
    CapReached {
        /// Generations drawn in all.
        generations: u64,
        /// Valid samples found within them.
        valid: usize,
    },
    /// An MCMC chain never held a valid sequence within the max-tokens cut: its first GCD
    /// sample reached `max_tokens` without EOS, and no proposal was valid either.
    ChainOutsideCut {
        /// The chain (0-based).
        chain: usize,
        /// The cut (`max_tokens`).
        max_tokens: usize,
        /// The chain's steps (the first sample and the proposals).
        steps: usize,
    },
    /// The caller's event sink asked the run to stop.
    Cancelled,
    /// The method cannot run with these arguments or this constraint.
    Unsupported(String),
    /// The constraint failed while answering ([`crate::Constraint::take_error`]).
    Constraint(String),
}

impl std::fmt::Display for SampleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SampleError::Lm(e) => write!(f, "language model error: {e}"),
            SampleError::DeadEnd { prefix } => write!(f, "dead end after {prefix:?}"),
            SampleError::ZeroProbability => f.write_str(
                "the constraint has probability zero under the model within --max-tokens tokens",
            ),
            SampleError::GaveUp { generations } => write!(
                f,
                "no valid sample in {generations} generations in a row: the constraint's \
                 probability under the model is zero or too small for this method, or \
                 --max-tokens is too small"
            ),
            SampleError::CapReached { generations, valid } => write!(
                f,
                "the generation cap was reached: {valid} valid samples in {generations} \
                 generations (--generation-cap)"
            ),
            SampleError::ChainOutsideCut {
                chain,
                max_tokens,
                steps,
            } => write!(
                f,
                "MCMC chain {chain}: its first sample reached --max-tokens ({max_tokens}) \
                 without EOS and none of its {steps} steps found a valid sequence within \
                 {max_tokens} tokens; raise --max-tokens"
            ),
            SampleError::Cancelled => f.write_str("stopped"),
            SampleError::Unsupported(m) => f.write_str(m),
            SampleError::Constraint(m) => write!(f, "constraint error: {m}"),
        }
    }
}

impl std::error::Error for SampleError {}

impl From<LmError> for SampleError {
    fn from(e: LmError) -> Self {
        SampleError::Lm(e)
    }
}
