//! Small numeric helpers shared by the samplers.

use crate::TokenId;

/// The `k` most likely tokens of `logprobs`, most likely first (ties: the lower id first),
/// in one pass that keeps the best `k` so far (k is small: the events' top tokens).
pub fn top_k(logprobs: &[f64], k: usize) -> Vec<TokenId> {
    let k = k.min(logprobs.len());
    let mut best: Vec<TokenId> = Vec::with_capacity(k + 1);
    if k == 0 {
        return best;
    }
    let above = |a: TokenId, b: TokenId| {
        logprobs[a as usize]
            .total_cmp(&logprobs[b as usize])
            .is_gt()
    };
    for t in 0..logprobs.len() as TokenId {
        if best.len() == k && !above(t, best[k - 1]) {
            continue;
        }
        // After every kept token at least as likely: ties keep the lower id first.
        let at = best.partition_point(|&b| !above(t, b));
        best.insert(at, t);
        best.truncate(k);
    }
    best
}

/// Which distinct prefix each of `prefixes` is, numbered in order of first appearance (so
/// the first member of each group comes before the rest): what a batch with repeats
/// (resampling's copies) computes once per group.
pub fn first_appearance(prefixes: &[&[TokenId]]) -> Vec<usize> {
    let mut seen: std::collections::HashMap<&[TokenId], usize> =
        std::collections::HashMap::with_capacity(prefixes.len());
    prefixes
        .iter()
        .map(|&t| {
            let next = seen.len();
            *seen.entry(t).or_insert(next)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_takes_the_most_likely_first() {
        let xs = [0.1f64.ln(), 0.6f64.ln(), 0.3f64.ln()];
        assert_eq!(top_k(&xs, 2), vec![1, 2]);
        assert!(top_k(&xs, 0).is_empty());
        let (a, b): (&[TokenId], &[TokenId]) = (&[1, 2], &[1]);
        assert_eq!(first_appearance(&[b, a, b, a, &[]]), vec![0, 1, 0, 1, 2]);
        assert_eq!(top_k(&xs, 9), vec![1, 2, 0]);
        // Against a full sort, ties included.
        let ys: Vec<f64> = (0..200).map(|i| ((i * 37) % 23) as f64 * -0.5).collect();
        let mut sorted: Vec<TokenId> = (0..200).collect();
        sorted.sort_by(|&a, &b| ys[b as usize].total_cmp(&ys[a as usize]).then(a.cmp(&b)));
        for k in [1, 5, 23, 200] {
            assert_eq!(top_k(&ys, k), sorted[..k]);
        }
    }
}
