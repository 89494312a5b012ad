//! Exact P^L by depth-first enumeration of a finite language through the constraint.

use crate::lm::check_logprobs;
use crate::math::{logsumexp, normalize};
use crate::{Constraint, LanguageModel, LmError, TokenId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Bounds on an enumeration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most tokens in one sequence, EOS included (the samplers' `max_tokens`).
    pub max_tokens: usize,
    /// Most sequences to list before refusing.
    pub max_sequences: usize,
}

/// Why a language could not be enumerated.
#[derive(Clone, Debug, PartialEq)]
pub enum EnumerateError {
    /// The language model failed.
    Lm(LmError),
    /// A viable prefix needs more than `max_tokens` tokens to finish.
    TooLong {
        /// The bound that was exceeded.
        max_tokens: usize,
    },
    /// More than `max_sequences` token sequences.
    TooMany {
        /// The bound that was exceeded.
        max_sequences: usize,
    },
    /// No token sequence of the language fits in `max_tokens`.
    Empty,
    /// Every sequence of the language has probability zero under the model.
    ZeroMass,
    /// The constraint failed while answering ([`crate::Constraint::take_error`]).
    Constraint(String),
}

impl std::fmt::Display for EnumerateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnumerateError::Lm(e) => write!(f, "language model error: {e}"),
            EnumerateError::TooLong { max_tokens } => write!(
                f,
                "the language has token sequences longer than {max_tokens} tokens (it may be \
                 infinite); cannot enumerate it"
            ),
            EnumerateError::TooMany { max_sequences } => write!(
                f,
                "the language has more than {max_sequences} token sequences; too large to enumerate"
            ),
            EnumerateError::Empty => f.write_str("the language has no valid token sequence"),
            EnumerateError::ZeroMass => {
                f.write_str("the constraint has probability zero under the model")
            }
            EnumerateError::Constraint(m) => write!(f, "constraint error: {m}"),
        }
    }
}

impl std::error::Error for EnumerateError {}

/// One token sequence of the language.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The tokens, EOS last.
    pub tokens: Vec<TokenId>,
    /// log P(tokens) under the unconstrained model.
    pub logp: f64,
    /// P^L(tokens) = P(tokens)/Z.
    pub p: f64,
}

/// P^L over every token sequence of a finite language, most probable first. It travels as
/// its entries (the page's sampling worker sends it to the page).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "Vec<Entry>", into = "Vec<Entry>")]
pub struct ExactDistribution {
    /// The sequences.
    pub entries: Vec<Entry>,
    /// log Z, Z = P(L) = Σ P(w) over the language.
    pub log_z: f64,
    /// Z = P(L).
    pub z: f64,
    index: HashMap<Vec<TokenId>, usize>,
}

impl ExactDistribution {
    /// The position of `tokens` in `entries`, if it is in the language.
    pub fn index_of(&self, tokens: &[TokenId]) -> Option<usize> {
        self.index.get(tokens).copied()
    }
    /// P^L of every entry, in order.
    pub fn probs(&self) -> Vec<f64> {
        self.entries.iter().map(|e| e.p).collect()
    }
    /// How often each entry occurs among `samples`, and how many samples are not in the
    /// language at all.
    pub fn counts<'a>(&self, samples: impl IntoIterator<Item = &'a [TokenId]>) -> (Vec<u64>, u64) {
        let mut counts = vec![0; self.entries.len()];
        let mut outside = 0;
        for s in samples {
            match self.index_of(s) {
                Some(i) => counts[i] += 1,
                None => outside += 1,
            }
        }
        (counts, outside)
    }
    /// The distribution over `entries` given by probabilities keyed by token sequence
    /// (sequences outside the language are summed into the second value).
    pub fn align(&self, dist: &HashMap<Vec<TokenId>, f64>) -> (Vec<f64>, f64) {
        let mut p = vec![0.0; self.entries.len()];
        let mut outside = 0.0;
        for (tokens, &q) in dist {
            match self.index_of(tokens) {
                Some(i) => p[i] += q,
                None => outside += q,
            }
        }
        (p, outside)
    }
}

/// Lists every token sequence w (EOS-terminated, at most `max_tokens` tokens) whose bytes
/// are in the constraint's language, with P(w) and P^L(w). Every tokenization counts, so
/// "ab" as `a·b` and as `ab` are two entries. Refuses when a viable prefix cannot finish
/// within `max_tokens` (an infinite or too long language) or when there are more than
/// `max_sequences` sequences.
pub async fn enumerate<L: LanguageModel, C: Constraint>(
    lm: &mut L,
    constraint: &C,
    limits: Limits,
) -> Result<ExactDistribution, EnumerateError> {
    enumerate_impl(lm, constraint, limits, Longer::Refuse).await
}

/// The samplers' target: P restricted to the valid sequences of at most `max_tokens`
/// tokens (EOS included; see [`crate::samplers::cut`]). Unlike [`enumerate`], a language
/// with longer sequences is not refused: they are left out, as the samplers leave them out.
pub async fn enumerate_within<L: LanguageModel, C: Constraint>(
    lm: &mut L,
    constraint: &C,
    limits: Limits,
) -> Result<ExactDistribution, EnumerateError> {
    enumerate_impl(lm, constraint, limits, Longer::LeaveOut).await
}

/// What an enumeration does with a viable prefix that cannot finish within the cut.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Longer {
    Refuse,
    LeaveOut,
}

async fn enumerate_impl<L: LanguageModel, C: Constraint>(
    lm: &mut L,
    constraint: &C,
    limits: Limits,
    longer: Longer,
) -> Result<ExactDistribution, EnumerateError> {
    let eos = constraint.eos();
    let mut found: Vec<(Vec<TokenId>, f64)> = Vec::new();
    let mut stack: Vec<(Vec<TokenId>, C::State, f64)> =
        vec![(Vec::new(), constraint.initial(), 0.0)];
    while let Some((tokens, state, logp)) = stack.pop() {
        let lp = lm.logprobs(&tokens).await.map_err(EnumerateError::Lm)?;
        check_logprobs(&lp).map_err(EnumerateError::Lm)?;
        let probs = normalize(&lp);
        let mask = constraint.mask(&state);
        for t in mask.iter().collect::<Vec<_>>().into_iter().rev() {
            let lp = logp + probs[t as usize].ln();
            let mut next = tokens.clone();
            next.push(t);
            if t == eos {
                if next.len() > limits.max_tokens {
                    return Err(EnumerateError::TooLong {
                        max_tokens: limits.max_tokens,
                    });
                }
                found.push((next, lp));
                if found.len() > limits.max_sequences {
                    return Err(EnumerateError::TooMany {
                        max_sequences: limits.max_sequences,
                    });
                }
            } else {
                // A viable non-EOS prefix still needs at least an EOS.
                if next.len() + 1 > limits.max_tokens {
                    if longer == Longer::LeaveOut {
                        continue;
                    }
                    return Err(EnumerateError::TooLong {
                        max_tokens: limits.max_tokens,
                    });
                }
                if let Some(s) = constraint.advance(&state, t) {
                    stack.push((next, s, lp));
                }
            }
        }
        // A failed mask or advance would silently drop sequences from the list.
        if let Some(e) = constraint.take_error() {
            return Err(EnumerateError::Constraint(e));
        }
    }
    if found.is_empty() {
        return Err(EnumerateError::Empty);
    }
    let log_z = logsumexp(found.iter().map(|f| f.1));
    if log_z == f64::NEG_INFINITY {
        return Err(EnumerateError::ZeroMass);
    }
    Ok(ExactDistribution::from(
        found
            .into_iter()
            .map(|(tokens, logp)| Entry {
                tokens,
                logp,
                p: 0.0,
            })
            .collect::<Vec<_>>(),
    ))
}

impl From<Vec<Entry>> for ExactDistribution {
    /// The distribution over `entries` by their `logp` (`p` recomputed, most probable first).
    fn from(mut entries: Vec<Entry>) -> Self {
        let log_z = logsumexp(entries.iter().map(|e| e.logp));
        for e in &mut entries {
            e.p = (e.logp - log_z).exp();
        }
        entries.sort_by(|a, b| b.p.total_cmp(&a.p).then_with(|| a.tokens.cmp(&b.tokens)));
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.tokens.clone(), i))
            .collect();
        ExactDistribution {
            entries,
            log_z,
            z: log_z.exp(),
            index,
        }
    }
}

impl From<ExactDistribution> for Vec<Entry> {
    fn from(d: ExactDistribution) -> Self {
        d.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Vocabulary;
    use crate::block_on;
    use crate::toy::{FiniteLanguage, FnLm, gsk_constraint, gsk_lm};

    fn limits(max_tokens: usize) -> Limits {
        Limits {
            max_tokens,
            max_sequences: 1000,
        }
    }

    /// A constraint failing mid-enumeration ends it with the error instead of a list with
    /// sequences missing.
    #[test]
    fn a_constraint_error_ends_the_enumeration_with_it() {
        for fail_at in [1, 3, 10, 30] {
            let c = crate::toy::Failing::new(gsk_constraint(), fail_at);
            let r = block_on(enumerate(&mut gsk_lm(), &c, limits(64)));
            assert_eq!(
                r.unwrap_err(),
                EnumerateError::Constraint(format!("failed at call {fail_at}"))
            );
        }
        let c = crate::toy::Failing::new(gsk_constraint(), usize::MAX);
        assert_eq!(
            block_on(enumerate(&mut gsk_lm(), &c, limits(64)))
                .unwrap()
                .entries
                .len(),
            17
        );
    }

    #[test]
    fn gsk_has_seventeen_sequences_and_known_mass() {
        let d = block_on(enumerate(&mut gsk_lm(), &gsk_constraint(), limits(64))).unwrap();
        assert_eq!(d.entries.len(), 17);
        // Z = P(first token 1) + P(00000) = 0.55 + 0.45⁵·10⁻⁸.
        let z = 0.55 + 0.45f64.powi(5) * 1e-8;
        assert!((d.z - z).abs() < 1e-14, "Z = {}", d.z);
        assert!((d.probs().iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let i = d.index_of(&[0, 0, 0, 0, 0, 2]).unwrap();
        assert!((d.entries[i].p - 0.45f64.powi(5) * 1e-8 / z).abs() < 1e-20);
    }

    fn ab_vocab() -> Vocabulary {
        Vocabulary::new(
            vec![b"a".to_vec(), b"b".to_vec(), b"ab".to_vec(), Vec::new()],
            3,
            &[3],
        )
    }

    fn uniform_lm() -> FnLm<impl Fn(&[TokenId]) -> Vec<f64>> {
        FnLm::new(4, 3, |_: &[TokenId]| vec![0.25; 4])
    }

    #[test]
    fn non_canonical_tokenizations_are_separate_entries() {
        let c = FiniteLanguage::new(ab_vocab(), vec![b"ab".to_vec(), b"b".to_vec()]);
        let d = block_on(enumerate(&mut uniform_lm(), &c, limits(8))).unwrap();
        let mut seqs: Vec<_> = d.entries.iter().map(|e| e.tokens.clone()).collect();
        seqs.sort();
        assert_eq!(seqs, vec![vec![0, 1, 3], vec![1, 3], vec![2, 3]]);
        // P(a·b·$) = 1/64, P(ab·$) = P(b·$) = 1/16: Z = 9/64.
        assert!((d.z - 9.0 / 64.0).abs() < 1e-15);
    }

    #[test]
    fn too_long_too_many_and_empty_are_refused() {
        let c = FiniteLanguage::new(ab_vocab(), vec![b"abab".to_vec()]);
        let e = block_on(enumerate(&mut uniform_lm(), &c, limits(4))).unwrap_err();
        assert_eq!(e, EnumerateError::TooLong { max_tokens: 4 });
        assert!(e.to_string().contains("longer than 4 tokens"));
        // "abab" has 4 tokenizations.
        let few = Limits {
            max_tokens: 8,
            max_sequences: 3,
        };
        let e = block_on(enumerate(&mut uniform_lm(), &c, few)).unwrap_err();
        assert_eq!(e, EnumerateError::TooMany { max_sequences: 3 });
        let none = FiniteLanguage::new(ab_vocab(), vec![b"c".to_vec()]);
        let e = block_on(enumerate(&mut uniform_lm(), &none, limits(8))).unwrap_err();
        assert_eq!(e, EnumerateError::Empty);
        let mut zero = FnLm::new(4, 3, |_: &[TokenId]| vec![0.0, 0.0, 0.0, 1.0]);
        let c = FiniteLanguage::new(ab_vocab(), vec![b"a".to_vec()]);
        let e = block_on(enumerate(&mut zero, &c, limits(8))).unwrap_err();
        assert_eq!(e, EnumerateError::ZeroMass);
    }
}
