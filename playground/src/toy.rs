//! Toy mode: the analytic language models of `sampler_core::toy` with their vocabularies,
//! built instantly from a [`ToyModel`] (no download).

use sampler_core::toy::{RandomLm, gsk_lm, gsk_vocabulary};
use sampler_core::{LanguageModel, LmError, TokenId, Vocabulary};
use serde::{Deserialize, Serialize};

/// An analytic language model of toy mode (instant, no download).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToyModel {
    /// The skewed model of the ASAp paper over `0`, `1` and EOS (seed 004, Fig. 1).
    Gsk,
    /// A seeded random bigram model over `vocab` letter tokens (`a`, `b`, …) and EOS.
    Random {
        /// The model's seed (not the sampler's).
        seed: u64,
        /// Letter tokens besides EOS (2 to 8).
        vocab: u8,
    },
}

/// G_sk as a regex over the toy vocabulary `0`, `1`: `00000` or five digits starting with 1.
pub const GSK_REGEX: &str = "00000|1[01]{4}";

/// Context length of the toy random model (a bigram model).
pub const RANDOM_ORDER: usize = 1;

/// Next-token probabilities as a function of the prefix.
pub type ProbsFn = Box<dyn Fn(&[TokenId]) -> Vec<f64>>;

/// A toy language model: G_sk or a seeded random bigram model.
pub enum ToyLm {
    /// The G_sk model (seed 004): 0.45 / 0.55 per digit, a trap after `0000`.
    Gsk(ProbsFn),
    /// A seeded random bigram model.
    Random(RandomLm),
}

impl std::fmt::Debug for ToyLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToyLm::Gsk(_) => f.write_str("ToyLm::Gsk"),
            ToyLm::Random(r) => write!(f, "ToyLm::Random({r:?})"),
        }
    }
}

impl ToyLm {
    /// Builds the model `toy` names.
    pub fn new(toy: ToyModel) -> Self {
        match toy {
            ToyModel::Gsk => {
                let lm = gsk_lm();
                ToyLm::Gsk(Box::new(move |p: &[TokenId]| lm.probs(p)))
            }
            ToyModel::Random { seed, vocab } => {
                let v = vocab as usize;
                ToyLm::Random(RandomLm::new(v + 1, v as TokenId, RANDOM_ORDER, seed))
            }
        }
    }

    /// Next-token probabilities (not logs) after `prefix`.
    pub fn probs(&self, prefix: &[TokenId]) -> Vec<f64> {
        match self {
            ToyLm::Gsk(f) => f(prefix),
            ToyLm::Random(r) => r.probs(prefix),
        }
    }
}

impl LanguageModel for ToyLm {
    fn vocab_size(&self) -> usize {
        match self {
            ToyLm::Gsk(_) => 3,
            ToyLm::Random(r) => r.vocab_size(),
        }
    }

    fn eos(&self) -> TokenId {
        match self {
            ToyLm::Gsk(_) => 2,
            ToyLm::Random(r) => r.eos(),
        }
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        Ok(self.probs(prefix).into_iter().map(f64::ln).collect())
    }
}

/// The vocabulary of a toy model: `0`, `1`, EOS for G_sk; `a`, `b`, … then EOS for a
/// random model. EOS has no bytes and is last.
pub fn toy_vocabulary(toy: ToyModel) -> Vocabulary {
    match toy {
        ToyModel::Gsk => gsk_vocabulary(),
        ToyModel::Random { vocab, .. } => {
            let v = vocab as usize;
            let mut tokens: Vec<Vec<u8>> = (0..v).map(|i| vec![b'a' + i as u8]).collect();
            tokens.push(Vec::new());
            Vocabulary::new(tokens, v as TokenId, &[v as TokenId])
        }
    }
}

/// The model and its vocabulary, ready for a run.
pub fn build(toy: ToyModel) -> (ToyLm, Vocabulary) {
    (ToyLm::new(toy), toy_vocabulary(toy))
}

/// A display name for a token of a toy vocabulary (`⟨eos⟩` for EOS).
pub fn token_label(vocab: &Vocabulary, t: TokenId) -> String {
    if (t as usize) >= vocab.len() {
        return format!("⟨{t}⟩");
    }
    if t == vocab.eos() {
        return "⟨eos⟩".into();
    }
    String::from_utf8_lossy(vocab.bytes(t)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sampler_core::block_on;

    #[test]
    fn toy_models_match_their_vocabularies_and_sum_to_one() {
        for toy in [ToyModel::Gsk, ToyModel::Random { seed: 5, vocab: 3 }] {
            let mut lm = ToyLm::new(toy);
            let v = toy_vocabulary(toy);
            assert_eq!(lm.vocab_size(), v.len());
            assert_eq!(lm.eos(), v.eos());
            for prefix in [&[][..], &[0], &[1, 0]] {
                let s: f64 = block_on(lm.logprobs(prefix))
                    .unwrap()
                    .iter()
                    .map(|l| l.exp())
                    .sum();
                assert!((s - 1.0).abs() < 1e-12);
            }
        }
        let v = toy_vocabulary(ToyModel::Random { seed: 0, vocab: 3 });
        assert_eq!(v.decode(&[0, 2, 1, 3]), b"acb");
        assert_eq!(token_label(&v, 3), "⟨eos⟩");
        assert_eq!(token_label(&v, 1), "b");
    }

    #[test]
    fn gsk_trap_is_there() {
        let lm = ToyLm::new(ToyModel::Gsk);
        assert!((lm.probs(&[])[0] - 0.45).abs() < 1e-15);
        assert!(lm.probs(&[0, 0, 0, 0])[0] < 1e-8);
    }
}
