//! Distances and a goodness-of-fit test between samples and an exact distribution.

use super::gamma::regularized_gamma_q;
use serde::Serialize;

/// Total variation distance ½ Σ |p − q| (the shorter vector is padded with zeros).
pub fn total_variation(p: &[f64], q: &[f64]) -> f64 {
    let n = p.len().max(q.len());
    let at = |v: &[f64], i: usize| v.get(i).copied().unwrap_or(0.0);
    0.5 * (0..n).map(|i| (at(p, i) - at(q, i)).abs()).sum::<f64>()
}

/// KL(p ‖ q) = Σ p ln(p/q) in nats; +∞ when p puts mass where q has none.
pub fn kl_divergence(p: &[f64], q: &[f64]) -> f64 {
    let mut kl = 0.0;
    for (i, &pi) in p.iter().enumerate() {
        if pi <= 0.0 {
            continue;
        }
        let qi = q.get(i).copied().unwrap_or(0.0);
        if qi <= 0.0 {
            return f64::INFINITY;
        }
        kl += pi * (pi / qi).ln();
    }
    kl
}

/// Pearson's chi-square goodness-of-fit test of observed counts against probabilities.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ChiSquare {
    /// Σ (observed − expected)² / expected over the pooled bins (+∞ when a sample fell
    /// where the target has no mass).
    pub statistic: f64,
    /// Degrees of freedom: bins − 1.
    pub dof: usize,
    /// P(χ²_dof ≥ statistic), from the regularized upper incomplete gamma function.
    pub p_value: f64,
}

/// Tests `counts` (one per category, `outside` for samples in no category) against
/// `probs` (summing to 1). Categories whose expected count is below 5 are pooled, smallest
/// first, into one bin until it reaches 5. A sample outside the support gives statistic
/// +∞ and p-value 0. With a single bin there is nothing to test: statistic 0, p-value 1.
pub fn chi_square(counts: &[u64], probs: &[f64], outside: u64) -> ChiSquare {
    let n = counts.iter().sum::<u64>() + outside;
    let zero_hit = counts.iter().zip(probs).any(|(&c, &p)| c > 0 && p <= 0.0);
    if outside > 0 || zero_hit {
        return ChiSquare {
            statistic: f64::INFINITY,
            dof: probs.len().saturating_sub(1),
            p_value: 0.0,
        };
    }
    let nf = n as f64;
    let mut cats: Vec<(f64, f64)> = counts
        .iter()
        .zip(probs)
        .map(|(&c, &p)| (c as f64, p * nf))
        .collect();
    cats.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut bins: Vec<(f64, f64)> = Vec::new();
    let mut pool = (0.0, 0.0);
    let mut pooling = true;
    for (obs, exp) in cats {
        if pooling {
            pool = (pool.0 + obs, pool.1 + exp);
            if pool.1 >= 5.0 {
                bins.push(pool);
                pooling = false;
            }
        } else {
            bins.push((obs, exp));
        }
    }
    if pooling && pool.1 > 0.0 {
        // Everything was pooled and is still below 5: one bin.
        bins.push(pool);
    }
    if bins.len() < 2 {
        return ChiSquare {
            statistic: 0.0,
            dof: 0,
            p_value: 1.0,
        };
    }
    let statistic: f64 = bins
        .iter()
        .filter(|b| b.1 > 0.0)
        .map(|(o, e)| (o - e) * (o - e) / e)
        .sum();
    let dof = bins.len() - 1;
    ChiSquare {
        statistic,
        dof,
        p_value: regularized_gamma_q(dof as f64 / 2.0, statistic / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tv_and_kl_basics() {
        assert!((total_variation(&[0.5, 0.5], &[1.0]) - 0.5).abs() < 1e-15);
        assert_eq!(kl_divergence(&[0.5, 0.5], &[0.5, 0.5]), 0.0);
        assert_eq!(kl_divergence(&[0.5, 0.5], &[1.0, 0.0]), f64::INFINITY);
        assert!((kl_divergence(&[1.0, 0.0], &[0.5, 0.5]) - 2f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn chi_square_accepts_a_fit_and_rejects_a_misfit() {
        let p = [0.5, 0.3, 0.2];
        let good = chi_square(&[502, 297, 201], &p, 0);
        assert_eq!(good.dof, 2);
        assert!(good.p_value > 0.9, "{good:?}");
        let bad = chi_square(&[600, 250, 150], &p, 0);
        assert!(bad.p_value < 1e-6, "{bad:?}");
        assert_eq!(chi_square(&[1, 0], &[1.0, 0.0], 1).p_value, 0.0);
        assert_eq!(chi_square(&[1, 1], &[1.0, 0.0], 0).statistic, f64::INFINITY);
    }

    #[test]
    fn rare_categories_are_pooled() {
        // Expected counts 990, 5, 3, 2 at n = 1000: 2 and 3 pool into one bin of 5.
        let p = [0.990, 0.005, 0.003, 0.002];
        let c = chi_square(&[990, 4, 4, 2], &p, 0);
        assert_eq!(c.dof, 2);
        assert!(c.p_value > 0.5, "{c:?}");
    }
}
