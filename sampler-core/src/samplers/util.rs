//! Small numeric helpers shared by the samplers.

use crate::TokenId;

/// log Σ exp(xs), stable; −∞ for an empty or all −∞ input.
pub fn logsumexp(xs: impl IntoIterator<Item = f64>) -> f64 {
    let xs: Vec<f64> = xs.into_iter().collect();
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// The `k` most likely tokens of `logprobs`, most likely first.
pub fn top_k(logprobs: &[f64], k: usize) -> Vec<TokenId> {
    let mut idx: Vec<TokenId> = (0..logprobs.len() as TokenId).collect();
    let k = k.min(idx.len());
    if k == 0 {
        return Vec::new();
    }
    idx.select_nth_unstable_by(k - 1, |&a, &b| {
        logprobs[b as usize].total_cmp(&logprobs[a as usize])
    });
    idx.truncate(k);
    idx.sort_by(|&a, &b| logprobs[b as usize].total_cmp(&logprobs[a as usize]));
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logsumexp_and_top_k() {
        let xs = [0.1f64.ln(), 0.6f64.ln(), 0.3f64.ln()];
        assert!(logsumexp(xs).abs() < 1e-12);
        assert_eq!(logsumexp([f64::NEG_INFINITY]), f64::NEG_INFINITY);
        assert_eq!(top_k(&xs, 2), vec![1, 2]);
        assert!(top_k(&xs, 0).is_empty());
    }
}
