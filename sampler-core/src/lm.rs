//! The language-model seam: next-token log-probabilities.

use crate::TokenId;

/// An error from a language model (GPU lost, context too long, read-back failed, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LmError(pub String);

impl std::fmt::Display for LmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LmError {}

/// `Err` naming the first token whose log-probability is NaN or +∞ (a broken model file, or
/// an overflow in its arithmetic); -∞, probability zero, is fine. Every sampler's model
/// call goes through it, so none draws from weights that are not numbers (a NaN total
/// would make a rejection loop draw the same token forever).
pub fn check_logprobs(logprobs: &[f64]) -> Result<(), LmError> {
    match first_not_a_logprob(logprobs) {
        None => Ok(()),
        Some(t) => Err(LmError(format!(
            "the model gave token {t} the log-probability {}: its weights or its arithmetic \
             are broken (a corrupt file, or an overflow)",
            logprobs[t]
        ))),
    }
}

/// The index of the first value that is no log-probability: NaN or +∞ (-∞ is probability 0).
pub fn first_not_a_logprob(logprobs: &[f64]) -> Option<usize> {
    logprobs
        .iter()
        .position(|x| x.is_nan() || *x == f64::INFINITY)
}

/// A language model over a fixed vocabulary, conditioned on a prompt it holds itself.
///
/// `prefix` is always the *generated* token sequence after the prompt; implementations
/// keep whatever cache they like (a KV cache keyed by the longest shared prefix).
#[allow(async_fn_in_trait)]
pub trait LanguageModel {
    /// Number of tokens in the vocabulary (EOS included).
    fn vocab_size(&self) -> usize;
    /// The end-of-sequence token.
    fn eos(&self) -> TokenId;
    /// Natural-log probabilities of every next token after `prompt ++ prefix`; they sum to 1.
    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError>;
    /// Batched form for particles; the default evaluates one prefix after another.
    async fn logprobs_batch(&mut self, prefixes: &[&[TokenId]]) -> Result<Vec<Vec<f64>>, LmError> {
        let mut out = Vec::with_capacity(prefixes.len());
        for p in prefixes {
            out.push(self.logprobs(p).await?);
        }
        Ok(out)
    }
    /// Tokens run through the network so far (prefill and decode); 0 for analytic models.
    fn forward_tokens(&self) -> u64 {
        0
    }
}
