//! A language model given by a plain function.

use crate::{LanguageModel, LmError, TokenId};

/// A language model whose next-token distribution is `f(prefix)` (probabilities, summing to 1).
#[derive(Clone, Debug)]
pub struct FnLm<F> {
    vocab_size: usize,
    eos: TokenId,
    f: F,
}

impl<F: Fn(&[TokenId]) -> Vec<f64>> FnLm<F> {
    /// A model over `vocab_size` tokens with end-of-sequence token `eos`.
    pub fn new(vocab_size: usize, eos: TokenId, f: F) -> Self {
        FnLm { vocab_size, eos, f }
    }

    /// The probabilities (not logs) after `prefix`.
    pub fn probs(&self, prefix: &[TokenId]) -> Vec<f64> {
        (self.f)(prefix)
    }
}

impl<F: Fn(&[TokenId]) -> Vec<f64>> LanguageModel for FnLm<F> {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    fn eos(&self) -> TokenId {
        self.eos
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        let p = (self.f)(prefix);
        if p.len() != self.vocab_size {
            return Err(LmError(format!(
                "toy model returned {} probabilities for a vocabulary of {}",
                p.len(),
                self.vocab_size
            )));
        }
        Ok(p.into_iter().map(f64::ln).collect())
    }
}
