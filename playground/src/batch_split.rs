//! How a worker splits a batch of sequences over itself and its idle peers (the page's
//! pool of sampling workers): each sequence goes to the worker whose KV cache holds its
//! longest prefix (the one that computed it or its parent in the last call), so that after
//! SMC's resampling a particle rarely has to be run again from the prompt elsewhere; no
//! worker takes more than its share, ⌈n / workers⌉, so the work stays even.

use sampler_core::TokenId;
use std::collections::HashMap;
use std::hash::Hash;

/// For each of `prefixes`, the index into `workers` that computes it. `owner` maps the
/// sequences of the last call to the worker that computed them. Copies of one sequence
/// (particles after resampling) go to one worker, which computes it once, and count once
/// toward its share.
pub fn assign<W: Copy + Eq + Hash>(
    prefixes: &[&[TokenId]],
    workers: &[W],
    owner: &HashMap<Vec<TokenId>, W>,
) -> Vec<usize> {
    // The distinct sequences, in order of first appearance.
    let mut first: HashMap<&[TokenId], usize> = HashMap::new();
    let mut distinct: Vec<&[TokenId]> = Vec::new();
    let of: Vec<usize> = prefixes
        .iter()
        .map(|p| {
            *first.entry(p).or_insert_with(|| {
                distinct.push(p);
                distinct.len() - 1
            })
        })
        .collect();
    let k = workers.len().max(1);
    let cap = distinct.len().div_ceil(k);
    let mut load = vec![0usize; k];
    let mut to = vec![usize::MAX; distinct.len()];
    // The worker holding each sequence's longest prefix, if it has room.
    for (i, p) in distinct.iter().enumerate() {
        let held = (0..=p.len())
            .rev()
            .find_map(|l| owner.get(&p[..l]))
            .and_then(|w| workers.iter().position(|x| x == w));
        if let Some(j) = held
            && load[j] < cap
        {
            to[i] = j;
            load[j] += 1;
        }
    }
    // The rest to the least loaded worker, the first of those tied.
    for t in to.iter_mut().filter(|t| **t == usize::MAX) {
        let j = (0..k).min_by_key(|&j| load[j]).unwrap_or(0);
        *t = j;
        load[j] += 1;
    }
    of.into_iter().map(|d| to[d]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_follow_their_prefix_within_an_even_share() {
        let seqs: Vec<Vec<TokenId>> = (0..8).map(|i| vec![1, 2, i]).collect();
        let refs: Vec<&[TokenId]> = seqs.iter().map(Vec::as_slice).collect();
        // Nothing known: an even split, lowest worker first.
        let a = assign(&refs, &['a', 'b'], &HashMap::new());
        assert_eq!(a, vec![0, 1, 0, 1, 0, 1, 0, 1]);
        // The last call ran [1, 2, i] on `b` for even i and on `a` for odd i; this call
        // extends each by one token: each goes back to its worker.
        let owner: HashMap<Vec<TokenId>, char> = (0..8)
            .map(|i| (vec![1, 2, i], if i % 2 == 0 { 'b' } else { 'a' }))
            .collect();
        let next: Vec<Vec<TokenId>> = (0..8).map(|i| vec![1, 2, i, 9]).collect();
        let refs: Vec<&[TokenId]> = next.iter().map(Vec::as_slice).collect();
        assert_eq!(
            assign(&refs, &['a', 'b'], &owner),
            vec![1, 0, 1, 0, 1, 0, 1, 0]
        );
        // After resampling every particle descends from [1, 2, 0] (on `b`): `b` takes its
        // share of four, the rest go to `a`.
        let resampled: Vec<Vec<TokenId>> = (0..8).map(|i| vec![1, 2, 0, i]).collect();
        let refs: Vec<&[TokenId]> = resampled.iter().map(Vec::as_slice).collect();
        let a = assign(&refs, &['a', 'b'], &owner);
        assert_eq!(a.iter().filter(|&&j| j == 1).count(), 4);
        assert_eq!(a.iter().filter(|&&j| j == 0).count(), 4);
        // A worker that is gone from the list is not assigned.
        let a = assign(&refs, &['a', 'c'], &owner);
        assert_eq!(a, vec![0, 1, 0, 1, 0, 1, 0, 1]);
        // Three workers, seven sequences: at most three each.
        let a = assign(&refs[..7], &['a', 'b', 'c'], &owner);
        assert!((0..3).all(|j| a.iter().filter(|&&x| x == j).count() <= 3));
        // Copies of one sequence go together and count once: six copies of [1, 2, 0, 9]
        // (on `b`'s prefix) and two others share out as 1 + 2.
        let mut dup: Vec<Vec<TokenId>> = vec![vec![1, 2, 0, 9]; 6];
        dup.push(vec![1, 2, 1, 9]);
        dup.push(vec![1, 2, 3, 9]);
        let refs: Vec<&[TokenId]> = dup.iter().map(Vec::as_slice).collect();
        let a = assign(&refs, &['a', 'b'], &owner);
        assert_eq!(a, vec![1, 1, 1, 1, 1, 1, 0, 0]);
    }
}
