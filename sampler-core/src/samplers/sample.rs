//! What a run produces: samples and the cost counters.

use crate::TokenId;
use serde::{Deserialize, Serialize};

/// Cumulative costs of a run, the papers' measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Calls for next-token distributions (one per prefix evaluated).
    pub lm_calls: u64,
    /// Tokens run through the network (prefill and decode), as the model reports them.
    pub forward_tokens: u64,
    /// Constraint evaluations: one per token checked; a full mask counts the vocabulary size.
    pub constraint_checks: u64,
    /// Sequences generated from the start (whole or stopped early), valid or not.
    pub generations: u64,
}

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
