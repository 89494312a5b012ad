//! Effective sample size and the two resampling schemes of SMC (seed 003 App. A Alg. 1).

use crate::RandomSource;
use crate::math::logsumexp;
use crate::samplers::Resampling;

/// (Σw)² / Σw² from log weights; 0 when every weight is 0.
pub fn ess(log_w: &[f64]) -> f64 {
    let lse = logsumexp(log_w.iter().copied());
    if lse == f64::NEG_INFINITY {
        return 0.0;
    }
    let sq: f64 = log_w.iter().map(|l| (2.0 * (l - lse)).exp()).sum();
    1.0 / sq
}

/// Normalized weights from log weights (all 0 when every weight is 0).
pub fn normalized(log_w: &[f64]) -> Vec<f64> {
    let lse = logsumexp(log_w.iter().copied());
    if lse == f64::NEG_INFINITY {
        return vec![0.0; log_w.len()];
    }
    log_w.iter().map(|l| (l - lse).exp()).collect()
}

/// Ancestor indices for `log_w.len()` new particles drawn proportionally to the weights
/// (at least one weight must be positive).
pub fn ancestors(scheme: Resampling, log_w: &[f64], rng: &mut dyn RandomSource) -> Vec<usize> {
    let w = normalized(log_w);
    let m = w.len();
    match scheme {
        Resampling::Multinomial => (0..m).map(|_| rng.categorical(&w)).collect(),
        Resampling::Stratified => {
            let (mut out, mut cum, mut j) = (Vec::with_capacity(m), w[0], 0);
            for k in 0..m {
                let u = (k as f64 + rng.uniform()) / m as f64;
                while u >= cum && j + 1 < m {
                    j += 1;
                    cum += w[j];
                }
                // Skip zero-weight particles that rounding could land on.
                let mut pick = j;
                while w[pick] == 0.0 && pick > 0 {
                    pick -= 1;
                }
                out.push(pick);
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededRng;

    #[test]
    fn ess_bounds() {
        assert!((ess(&[0.0; 4]) - 4.0).abs() < 1e-12);
        let lw = [0.0, f64::NEG_INFINITY, f64::NEG_INFINITY];
        assert!((ess(&lw) - 1.0).abs() < 1e-12);
        assert_eq!(ess(&[f64::NEG_INFINITY; 2]), 0.0);
    }

    /// Both schemes give each particle M·w copies in expectation (within 4 SE), never
    /// pick a zero-weight particle, and stratified keeps every count within 2 of M·w.
    #[test]
    fn resampling_is_unbiased() {
        let w = [0.5, 0.0, 0.3, 0.15, 0.05];
        let lw: Vec<f64> = w.iter().map(|x: &f64| x.ln()).collect();
        let mut rng = SeededRng::new(3);
        for scheme in [Resampling::Multinomial, Resampling::Stratified] {
            let runs = 20_000;
            let mut counts = [0.0; 5];
            for _ in 0..runs {
                let a = ancestors(scheme, &lw, &mut rng);
                assert!(!a.contains(&1));
                let mut c = [0usize; 5];
                a.iter().for_each(|&i| c[i] += 1);
                if scheme == Resampling::Stratified {
                    for i in 0..5 {
                        assert!((c[i] as f64 - 5.0 * w[i]).abs() < 2.0, "{c:?}");
                    }
                }
                (0..5).for_each(|i| counts[i] += c[i] as f64);
            }
            for i in 0..5 {
                let mean = counts[i] / runs as f64;
                let se = (5.0 * w[i] * (1.0 - w[i]) / runs as f64).sqrt();
                assert!(
                    (mean - 5.0 * w[i]).abs() <= 4.0 * se + 1e-12,
                    "{scheme:?} {i}"
                );
            }
        }
    }
}
