//! The numeric helpers every floor shares: log-sum-exp and renormalizing
//! log-probabilities. They sit below the samplers, the exact distributions and the HMM,
//! which all use them.

/// log Σ exp(xs), stable; −∞ for an empty or all −∞ input.
pub fn logsumexp(xs: impl IntoIterator<Item = f64>) -> f64 {
    let xs: Vec<f64> = xs.into_iter().collect();
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// Next-token probabilities from log-probabilities, renormalized in f64 (so that a node's
/// masses start from a distribution that sums to 1 up to rounding).
pub fn normalize(logprobs: &[f64]) -> Vec<f64> {
    let mut p: Vec<f64> = logprobs.iter().map(|&l| crate::exp::exp64(l)).collect();
    let s: f64 = p.iter().sum();
    if s > 0.0 {
        p.iter_mut().for_each(|x| *x /= s);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logsumexp_is_stable_and_normalize_sums_to_one() {
        let xs = [0.1f64.ln(), 0.6f64.ln(), 0.3f64.ln()];
        assert!(logsumexp(xs).abs() < 1e-12);
        assert!((logsumexp([1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-9);
        assert_eq!(logsumexp([f64::NEG_INFINITY]), f64::NEG_INFINITY);
        assert_eq!(logsumexp(Vec::<f64>::new()), f64::NEG_INFINITY);
        let p = normalize(&[0.2f64.ln(), 0.2f64.ln()]);
        assert!((p[0] - 0.5).abs() < 1e-15 && (p[1] - 0.5).abs() < 1e-15);
    }
}
