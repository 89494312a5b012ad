//! What a language model given as a function by the embedding program must answer, checked
//! in one place for every host (Python's `strait.FunctionModel`, JavaScript's
//! `FunctionModel`): its vocabulary and end token, and each batch of log-probability
//! vectors. A wrong answer becomes an error naming the prefix and the problem, before any
//! sampler sees it.

use crate::{LmError, TokenId, Vocabulary, first_not_a_logprob};

/// Largest |log Σ exp| an answer may show: a vector that is not normalized (logits, or a
/// softmax over another vocabulary) is refused rather than sampled from.
pub const NORMALIZED_WITHIN: f64 = 1e-3;

/// The vocabulary of a model over `tokens` (each token's bytes) whose end token is
/// `eos[0]`, or why it cannot be one.
pub fn vocabulary(tokens: Vec<Vec<u8>>, eos: &[TokenId]) -> Result<Vocabulary, String> {
    let Some(&first) = eos.first() else {
        return Err("a FunctionModel needs an end token (eos)".into());
    };
    if tokens.len() < 2 {
        return Err("a FunctionModel's vocabulary needs at least two tokens".into());
    }
    if let Some(&bad) = eos.iter().find(|&&e| e as usize >= tokens.len()) {
        return Err(format!(
            "the end token {bad} is not in the vocabulary of {} tokens",
            tokens.len()
        ));
    }
    if eos.len() > 1 {
        return Err(
            "a FunctionModel takes one end token: map the others to it in the callback \
             (give them probability 0 and their mass to the first)"
                .into(),
        );
    }
    Ok(Vocabulary::new(tokens, first, eos))
}

/// The callback's `answer` for `prefixes`, checked row by row against a vocabulary of
/// `vocab_len` tokens: one normalized vector of log-probabilities per prefix.
pub fn check_answer(
    prefixes: &[&[TokenId]],
    answer: Result<Vec<Vec<f64>>, String>,
    vocab_len: usize,
) -> Result<Vec<Vec<f64>>, LmError> {
    let v = vocab_len;
    let name = |i: usize| format!("{:?}", prefixes[i]);
    let rows = answer.map_err(|e| {
        LmError(format!(
            "the logprobs function failed on the prefixes {}: {e}",
            list(prefixes)
        ))
    })?;
    if rows.len() != prefixes.len() {
        return Err(LmError(format!(
            "the logprobs function returned {} rows for {} prefixes ({}): give one \
             vector per prefix, in order",
            rows.len(),
            prefixes.len(),
            list(prefixes)
        )));
    }
    for (i, row) in rows.iter().enumerate() {
        if row.len() != v {
            return Err(LmError(format!(
                "the logprobs function's vector for the prefix {} has {} entries, not {v} \
                 (the vocabulary's size)",
                name(i),
                row.len()
            )));
        }
        if let Some(t) = first_not_a_logprob(row) {
            return Err(LmError(format!(
                "the logprobs function gave token {t} after the prefix {} the \
                 log-probability {}: give log-probabilities (−∞ for probability 0)",
                name(i),
                row[t]
            )));
        }
        let total = crate::math::logsumexp(row.iter().copied());
        if total.abs() > NORMALIZED_WITHIN {
            return Err(LmError(format!(
                "the logprobs function's vector for the prefix {} is not normalized \
                 (log Σ exp = {total:.4}): give log-probabilities (a log-softmax), not \
                 logits",
                name(i)
            )));
        }
    }
    Ok(rows)
}

/// The prefixes for a message, the first few only.
fn list(prefixes: &[&[TokenId]]) -> String {
    let shown: Vec<String> = prefixes.iter().take(3).map(|p| format!("{p:?}")).collect();
    let more = prefixes.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}
