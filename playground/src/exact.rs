//! Ground truth for finite languages: exact P^L by enumeration (sampler-core), with caps
//! so that an infinite or huge language is refused with a message instead of freezing the
//! page, and the distances the page shows beside each sampler.

use sampler_core::exact::{self, EnumerateError, ExactDistribution};
use sampler_core::{Constraint, LanguageModel, LmError, TokenId};
use std::collections::HashMap;

/// Bounds on a ground-truth enumeration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactLimits {
    /// Most tokens in one sequence, EOS included (the run's max tokens).
    pub max_tokens: usize,
    /// Most sequences listed before refusing.
    pub max_sequences: usize,
    /// Most model calls (one per prefix explored) before refusing: a real model pays a
    /// forward pass for each.
    pub max_lm_calls: u64,
}

impl ExactLimits {
    /// Limits for a toy model (calls are free): 5,000 sequences, 200,000 calls.
    pub fn toy(max_tokens: usize) -> Self {
        ExactLimits {
            max_tokens,
            max_sequences: 5_000,
            max_lm_calls: 200_000,
        }
    }

    /// Limits for a real model: 500 sequences, 2,000 forward passes.
    pub fn real(max_tokens: usize) -> Self {
        ExactLimits {
            max_tokens,
            max_sequences: 500,
            max_lm_calls: 2_000,
        }
    }
}

/// A model that refuses calls past a budget.
struct Capped<'a, L> {
    inner: &'a mut L,
    left: u64,
    cap: u64,
}

impl<L: LanguageModel> LanguageModel for Capped<'_, L> {
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.inner.eos()
    }
    async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
        if self.left == 0 {
            return Err(LmError(format!(
                "the enumeration needs more than {} model calls",
                self.cap
            )));
        }
        self.left -= 1;
        self.inner.logprobs(prefix).await
    }
}

/// Why there is no ground truth, one line for the page.
pub fn describe(e: &EnumerateError) -> String {
    match e {
        EnumerateError::Lm(LmError(m)) if m.starts_with("the enumeration needs") => {
            format!("no exact distribution: {m}; the language is too large to enumerate here")
        }
        other => format!("no exact distribution: {other}"),
    }
}

/// Exact P^L of the constraint's language under the model, within `limits`.
pub async fn ground_truth<L: LanguageModel, C: Constraint>(
    lm: &mut L,
    constraint: &C,
    limits: ExactLimits,
) -> Result<ExactDistribution, String> {
    let mut capped = Capped {
        inner: lm,
        left: limits.max_lm_calls,
        cap: limits.max_lm_calls,
    };
    let l = exact::Limits {
        max_tokens: limits.max_tokens,
        max_sequences: limits.max_sequences,
    };
    exact::enumerate(&mut capped, constraint, l)
        .await
        .map_err(|e| describe(&e))
}

/// [`ground_truth`] with a model that never waits (toy mode): computed now.
pub fn ground_truth_ready<L: LanguageModel, C: Constraint>(
    lm: &mut L,
    constraint: &C,
    limits: ExactLimits,
) -> Result<ExactDistribution, String> {
    let fut = std::pin::pin!(ground_truth(lm, constraint, limits));
    let mut fut = fut;
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(r) => r,
        std::task::Poll::Pending => {
            Err("this model waits for its results; compute the ground truth asynchronously".into())
        }
    }
}

/// Total variation distance between an empirical distribution (probabilities keyed by
/// token sequence, summing to 1) and P^L; mass outside the language counts in full.
pub fn tv(empirical: &HashMap<Vec<TokenId>, f64>, exact: &ExactDistribution) -> f64 {
    let (q, outside) = exact.align(empirical);
    exact::total_variation(&q, &exact.probs()) + 0.5 * outside
}

/// KL(empirical ‖ P^L) in nats: +∞ when the samples put mass outside the language.
pub fn kl(empirical: &HashMap<Vec<TokenId>, f64>, exact: &ExactDistribution) -> f64 {
    let (q, outside) = exact.align(empirical);
    if outside > 0.0 {
        return f64::INFINITY;
    }
    exact::kl_divergence(&q, &exact.probs())
}

/// An empirical distribution from (possibly weighted) samples: each sequence's share of
/// the total weight (weight 1 when `None`). For SMC, give each particle its normalized
/// weight times its run's evidence Ĝ (as [`crate::views::ResultsView`] does): the
/// normalized weights alone, averaged over runs, are biased for small M.
pub fn empirical<'a>(
    samples: impl IntoIterator<Item = (&'a [TokenId], Option<f64>)>,
) -> HashMap<Vec<TokenId>, f64> {
    let mut m: HashMap<Vec<TokenId>, f64> = HashMap::new();
    let mut total = 0.0;
    for (t, w) in samples {
        let w = w.unwrap_or(1.0);
        if w.is_finite() && w > 0.0 {
            *m.entry(t.to_vec()).or_default() += w;
            total += w;
        }
    }
    if total > 0.0 {
        m.values_mut().for_each(|v| *v /= total);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraint::build_constraint;
    use crate::detect::GrammarKind;
    use crate::state::ToyModel;
    use crate::toy::GSK_REGEX;

    fn gsk_exact() -> ExactDistribution {
        let c =
            build_constraint(GrammarKind::Regex, GSK_REGEX, &ToyModel::Gsk.vocabulary()).unwrap();
        ground_truth_ready(&mut ToyModel::Gsk.lm(), &c, ExactLimits::toy(8)).unwrap()
    }

    #[test]
    fn gsk_ground_truth_and_distances() {
        let d = gsk_exact();
        assert_eq!(d.entries.len(), 17);
        // Every 1xxxx string: 0.55·(0.45^k 0.55^(4−k))/Z; Z = 0.55 + 0.45⁵·10⁻⁸.
        let exact: HashMap<_, _> = d.entries.iter().map(|e| (e.tokens.clone(), e.p)).collect();
        assert!(tv(&exact, &d) < 1e-12);
        assert!(kl(&exact, &d).abs() < 1e-12);
        // Token masking's distribution: `0` first (0.45) traps it into 00000; the 1xxxx
        // strings keep their unconstrained P(w) = P^L(w)·Z. TV(lcd, P^L) = 0.45.
        let lcd: HashMap<_, _> = d
            .entries
            .iter()
            .map(|e| {
                let p = if e.tokens[0] == 0 { 0.45 } else { e.p * d.z };
                (e.tokens.clone(), p)
            })
            .collect();
        assert!((lcd.values().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!((tv(&lcd, &d) - 0.45).abs() < 1e-8, "{}", tv(&lcd, &d));
        // Mass outside the language counts in full, and makes KL infinite.
        let outside: HashMap<_, _> = [(vec![0, 1, 2], 1.0)].into_iter().collect();
        assert!((tv(&outside, &d) - 1.0).abs() < 1e-12);
        assert_eq!(kl(&outside, &d), f64::INFINITY);
    }

    #[test]
    fn infinite_and_huge_languages_are_refused() {
        let v = (ToyModel::Random { seed: 1, vocab: 3 }).vocabulary();
        let mut lm = (ToyModel::Random { seed: 1, vocab: 3 }).lm();
        let inf = build_constraint(GrammarKind::Regex, "a+", &v).unwrap();
        let e = ground_truth_ready(&mut lm, &inf, ExactLimits::toy(16)).unwrap_err();
        assert!(e.contains("longer than 16 tokens"), "{e}");
        let huge = build_constraint(GrammarKind::Regex, "[abc]{9}", &v).unwrap();
        let e = ground_truth_ready(&mut lm, &huge, ExactLimits::toy(16)).unwrap_err();
        assert!(e.contains("more than 5000"), "{e}");
        let calls = ExactLimits {
            max_lm_calls: 10,
            ..ExactLimits::toy(16)
        };
        let e = ground_truth_ready(&mut lm, &huge, calls).unwrap_err();
        assert!(e.contains("more than 10 model calls"), "{e}");
    }

    #[test]
    fn empirical_weights_normalize() {
        let a: &[TokenId] = &[0, 2];
        let b: &[TokenId] = &[1, 2];
        let e = empirical([(a, Some(0.25)), (b, Some(0.75)), (a, None)]);
        assert!((e[&a.to_vec()] - 1.25 / 2.0).abs() < 1e-15);
        assert!((e[&b.to_vec()] - 0.75 / 2.0).abs() < 1e-15);
    }
}
