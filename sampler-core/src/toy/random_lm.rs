//! A seeded random n-gram language model over a tiny vocabulary.

use crate::{LanguageModel, LmError, SeededRng, TokenId};

/// Next-token probabilities drawn at random (deterministically from the seed) for every
/// context of the last `order` tokens; EOS gets at least `eos_floor` so sequences end.
#[derive(Clone, Debug)]
pub struct RandomLm {
    vocab_size: usize,
    eos: TokenId,
    seed: u64,
    order: usize,
    eos_floor: f64,
}

impl RandomLm {
    /// A model over `vocab_size` tokens (EOS = `eos`), contexts of `order` tokens.
    pub fn new(vocab_size: usize, eos: TokenId, order: usize, seed: u64) -> Self {
        RandomLm {
            vocab_size,
            eos,
            seed,
            order,
            eos_floor: 0.1,
        }
    }

    /// The probabilities (not logs) after `prefix`.
    pub fn probs(&self, prefix: &[TokenId]) -> Vec<f64> {
        let ctx = &prefix[prefix.len().saturating_sub(self.order)..];
        let mut h = self.seed ^ 0xA076_1D64_78BD_642F;
        for &t in ctx {
            h = h.wrapping_mul(0x100_0000_01B3).wrapping_add(t as u64 + 1);
        }
        h = h.wrapping_mul(31).wrapping_add(ctx.len() as u64);
        let mut rng = SeededRng::new(h);
        // Exponential draws normalized: a flat Dirichlet sample, squared to make it peaky.
        let mut p: Vec<f64> = (0..self.vocab_size)
            .map(|_| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                let e = -(1.0 - u).ln();
                e * e + 1e-3
            })
            .collect();
        let s: f64 = p.iter().sum();
        p.iter_mut().for_each(|x| *x /= s);
        let e = self.eos as usize;
        if p[e] < self.eos_floor {
            let rest = 1.0 - p[e];
            let scale = (1.0 - self.eos_floor) / rest;
            p.iter_mut().for_each(|x| *x *= scale);
            p[e] = self.eos_floor;
        }
        p
    }
}

impl LanguageModel for RandomLm {
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    fn eos(&self) -> TokenId {
        self.eos
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        Ok(self.probs(prefix).into_iter().map(f64::ln).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_normalized_and_context_dependent() {
        let lm = RandomLm::new(5, 4, 2, 7);
        let a = lm.probs(&[0, 1]);
        assert_eq!(a, lm.probs(&[3, 0, 1]));
        assert_ne!(a, lm.probs(&[1, 0]));
        assert!((a.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(a[4] >= 0.1 - 1e-12);
    }
}
