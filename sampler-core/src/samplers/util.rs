//! Small numeric helpers shared by the samplers.

use crate::TokenId;

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
    fn top_k_takes_the_most_likely_first() {
        let xs = [0.1f64.ln(), 0.6f64.ln(), 0.3f64.ln()];
        assert_eq!(top_k(&xs, 2), vec![1, 2]);
        assert!(top_k(&xs, 0).is_empty());
    }
}
