//! [`Counters`]: what a run has cost so far, the papers' measures. Below the samplers and
//! the event sink, which both speak of it.

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
