//! What a run produces: samples and the cost counters.

use crate::TokenId;
pub use crate::counters::Counters;
use serde::{Deserialize, Serialize};

/// One output of a sampler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The token sequence, EOS included when it ended.
    pub tokens: Vec<TokenId>,
    /// log P(tokens) under the unconstrained model, EOS included.
    pub logp: f64,
    /// Whether the sequence satisfies the constraint and ends with EOS.
    pub valid: bool,
    /// Importance weight where the method has one (SMC: normalized within the run).
    pub weight: Option<f64>,
    /// Which SMC run (or MCMC chain) the sample belongs to.
    pub run: Option<usize>,
    /// The run's counters when the sample was produced.
    pub counters: Counters,
}
