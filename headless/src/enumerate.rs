//! Exact P^L of a finite language: every token sequence (non-canonical tokenizations
//! included) with its probability, the lines of `strait enumerate`.

use crate::failure::Result;
use crate::model_source::{Source, with_lm};
use sampler_core::exact::{ExactDistribution, Limits, enumerate};
use sampler_core::{DynConstraint, Enumerated, TokenId, Vocabulary, block_on};
use serde_json::Value;

/// Most sequences `strait enumerate` lists before refusing ("too large to enumerate").
pub const MAX_SEQUENCES: usize = 100_000;

/// Exact P^L of `constraint` within `max_tokens` tokens (EOS included), after `prompt`.
pub fn exact(
    source: &mut Source,
    prompt: Vec<TokenId>,
    constraint: &DynConstraint<'static>,
    max_tokens: usize,
    max_sequences: usize,
) -> Result<ExactDistribution> {
    let limits = Limits {
        max_tokens,
        max_sequences,
    };
    with_lm(source, prompt, |mut lm| {
        Ok(block_on(enumerate(&mut lm, constraint, limits))?)
    })
}

/// `{"text", "tokens", "logp", "p"}` per sequence, most probable first.
pub fn lines(vocab: &Vocabulary, dist: &ExactDistribution) -> Vec<Value> {
    Enumerated::all(vocab, dist)
        .into_iter()
        .map(|e| serde_json::to_value(e).expect("a line is JSON"))
        .collect()
}
