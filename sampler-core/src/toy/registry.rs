//! The toy models by name: one registry for the command line (`--model toy:…`) and the
//! page's toy mode (its permalinks store a [`ToyModel`]).

use super::{GskLm, RandomLm, gsk_lm, gsk_vocabulary};
use crate::{LanguageModel, LmError, TokenId, Vocabulary};
use serde::{Deserialize, Serialize};

/// An analytic language model, instant and with no file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToyModel {
    /// `toy:gsk`: the skewed model of the ASAp paper over `0`, `1` and EOS (seed 004,
    /// Fig. 1).
    Gsk,
    /// `toy:letters:N:SEED`: a seeded random bigram model over `N` letter tokens (`a`,
    /// `b`, …; 2 to 8) and EOS — the page's random toy.
    Random {
        /// The model's seed (not the sampler's).
        seed: u64,
        /// Letter tokens besides EOS (2 to 8).
        vocab: u8,
    },
    /// `toy:random:SEED`: a seeded random bigram model over `a`, `b`, `ab`, `c` and EOS,
    /// where `ab` makes two tokenizations of one string possible.
    RandomAb {
        /// The model's seed.
        seed: u64,
    },
}

/// Letter tokens a `toy:letters` model may have.
pub const LETTERS: std::ops::RangeInclusive<u8> = 2..=8;

/// Context length of the random toy models (bigram models).
pub const RANDOM_ORDER: usize = 1;

impl ToyModel {
    /// Reads a model name: `toy:gsk`, `toy:random:SEED` or `toy:letters:N:SEED`.
    pub fn parse(name: &str) -> Result<ToyModel, String> {
        let seed = |s: &str| {
            s.parse::<u64>().map_err(|_| {
                format!(
                    "{name}: the seed must be a whole number from 0 to {}, got {s:?}",
                    u64::MAX
                )
            })
        };
        let parts: Vec<&str> = name.split(':').collect();
        match parts.as_slice() {
            ["toy", "gsk"] => Ok(ToyModel::Gsk),
            ["toy", "random", s] => Ok(ToyModel::RandomAb { seed: seed(s)? }),
            ["toy", "letters", n, s] => {
                let vocab = n.parse::<u8>().ok().filter(|v| LETTERS.contains(v));
                let vocab = vocab.ok_or_else(|| {
                    format!("{name}: toy:letters:N:SEED takes 2 to 8 letters, got {n:?}")
                })?;
                Ok(ToyModel::Random {
                    seed: seed(s)?,
                    vocab,
                })
            }
            _ => Err(format!(
                "unknown toy model {name:?}; expected toy:gsk, toy:random:SEED or \
                 toy:letters:N:SEED"
            )),
        }
    }

    /// The name [`ToyModel::parse`] reads back.
    pub fn name(&self) -> String {
        match self {
            ToyModel::Gsk => "toy:gsk".into(),
            ToyModel::Random { seed, vocab } => format!("toy:letters:{vocab}:{seed}"),
            ToyModel::RandomAb { seed } => format!("toy:random:{seed}"),
        }
    }

    /// The vocabulary: `0`, `1`, EOS for G_sk; `a`, `b`, … then EOS for `toy:letters`;
    /// `a`, `b`, `ab`, `c`, EOS for `toy:random`. EOS has no bytes and is last.
    pub fn vocabulary(&self) -> Vocabulary {
        match *self {
            ToyModel::Gsk => gsk_vocabulary(),
            ToyModel::Random { vocab, .. } => {
                let v = vocab as usize;
                let mut tokens: Vec<Vec<u8>> = (0..v).map(|i| vec![b'a' + i as u8]).collect();
                tokens.push(Vec::new());
                Vocabulary::new(tokens, v as TokenId, &[v as TokenId])
            }
            ToyModel::RandomAb { .. } => {
                let t = |s: &str| s.as_bytes().to_vec();
                Vocabulary::new(vec![t("a"), t("b"), t("ab"), t("c"), Vec::new()], 4, &[4])
            }
        }
    }

    /// The model.
    pub fn lm(&self) -> ToyLm {
        match *self {
            ToyModel::Gsk => ToyLm::Gsk(gsk_lm()),
            ToyModel::Random { seed, vocab } => {
                let v = vocab as usize;
                ToyLm::Random(RandomLm::new(v + 1, v as TokenId, RANDOM_ORDER, seed))
            }
            ToyModel::RandomAb { seed } => ToyLm::Random(RandomLm::new(5, 4, RANDOM_ORDER, seed)),
        }
    }
}

/// A toy model's language model ([`ToyModel::lm`]).
#[derive(Clone, Debug)]
pub enum ToyLm {
    /// The G_sk model: 0.45 / 0.55 per digit, a trap after `0000`.
    Gsk(GskLm),
    /// A seeded random bigram model.
    Random(RandomLm),
}

impl ToyLm {
    /// Next-token probabilities (not logs) after `prefix`.
    pub fn probs(&self, prefix: &[TokenId]) -> Vec<f64> {
        match self {
            ToyLm::Gsk(f) => f.probs(prefix),
            ToyLm::Random(r) => r.probs(prefix),
        }
    }
}

impl LanguageModel for ToyLm {
    fn vocab_size(&self) -> usize {
        match self {
            ToyLm::Gsk(f) => f.vocab_size(),
            ToyLm::Random(r) => r.vocab_size(),
        }
    }

    fn eos(&self) -> TokenId {
        match self {
            ToyLm::Gsk(f) => f.eos(),
            ToyLm::Random(r) => r.eos(),
        }
    }

    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        match self {
            ToyLm::Gsk(f) => f.logprobs(prefix).await,
            ToyLm::Random(r) => r.logprobs(prefix).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block_on;

    const ALL: [ToyModel; 3] = [
        ToyModel::Gsk,
        ToyModel::Random { seed: 5, vocab: 3 },
        ToyModel::RandomAb { seed: 7 },
    ];

    #[test]
    fn every_toy_matches_its_vocabulary_and_sums_to_one() {
        for toy in ALL {
            let mut lm = toy.lm();
            let v = toy.vocabulary();
            assert_eq!(lm.vocab_size(), v.len(), "{toy:?}");
            assert_eq!(lm.eos(), v.eos(), "{toy:?}");
            for prefix in [&[][..], &[0], &[1, 0]] {
                let s: f64 = block_on(lm.logprobs(prefix))
                    .unwrap()
                    .iter()
                    .map(|l| l.exp())
                    .sum();
                assert!((s - 1.0).abs() < 1e-12, "{toy:?} {prefix:?}");
            }
        }
        let v = ToyModel::Random { seed: 0, vocab: 3 }.vocabulary();
        assert_eq!(v.decode(&[0, 2, 1, 3]), b"acb");
        let v = ToyModel::RandomAb { seed: 0 }.vocabulary();
        assert_eq!(v.decode(&[2, 3]), b"abc");
    }

    #[test]
    fn names_read_back_and_bad_names_say_why() {
        for toy in ALL {
            assert_eq!(ToyModel::parse(&toy.name()), Ok(toy));
        }
        assert_eq!(
            ToyModel::parse("toy:random:3"),
            Ok(ToyModel::RandomAb { seed: 3 })
        );
        let e = ToyModel::parse("toy:random:x").unwrap_err();
        assert!(e.contains("whole number"), "{e}");
        let e = ToyModel::parse("toy:letters:9:1").unwrap_err();
        assert!(e.contains("2 to 8 letters"), "{e}");
        let e = ToyModel::parse("toy:zipf").unwrap_err();
        assert!(
            e.contains("unknown toy model") && e.contains("toy:letters:N:SEED"),
            "{e}"
        );
    }

    #[test]
    fn the_gsk_trap_is_there() {
        let lm = ToyModel::Gsk.lm();
        assert!((lm.probs(&[])[0] - 0.45).abs() < 1e-15);
        assert!(lm.probs(&[0, 0, 0, 0])[0] < 1e-8);
    }
}
