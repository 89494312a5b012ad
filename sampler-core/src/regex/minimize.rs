//! Hopcroft partition refinement of a transition table, so equivalent states merge.
//!
//! regex-automata's own minimizer keeps states apart that differ only in delayed-match
//! bookkeeping; under full-match semantics those are equivalent, so we minimize again.

/// Marks a missing (dead) transition.
pub(crate) const DEAD: u32 = u32::MAX;

/// Merges equivalent states of `(trans, accepting)` (`stride` classes per state, state 0
/// initial, every state live). Returns the new table and accepting flags, the initial state
/// still 0.
pub(crate) fn minimize(trans: &[u32], accepting: &[bool], stride: usize) -> (Vec<u32>, Vec<bool>) {
    let n = accepting.len();
    // State `n` is an explicit dead sink.
    let target = |s: usize, c: usize| -> usize {
        if s == n {
            return n;
        }
        match trans[s * stride + c] {
            DEAD => n,
            t => t as usize,
        }
    };
    // Inverse transitions in CSR form, indexed by `t * stride + c`.
    let mut start = vec![0u32; (n + 1) * stride + 1];
    for s in 0..=n {
        for c in 0..stride {
            start[target(s, c) * stride + c + 1] += 1;
        }
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut fill = start.clone();
    let mut preds = vec![0u32; (n + 1) * stride];
    for s in 0..=n {
        for c in 0..stride {
            let k = target(s, c) * stride + c;
            preds[fill[k] as usize] = s as u32;
            fill[k] += 1;
        }
    }
    let (acc, rest): (Vec<u32>, Vec<u32>) =
        (0..=n as u32).partition(|&s| (s as usize) < n && accepting[s as usize]);
    let mut blocks: Vec<Vec<u32>> = vec![acc, rest];
    blocks.retain(|b| !b.is_empty());
    let mut block_of = vec![0u32; n + 1];
    for (b, members) in blocks.iter().enumerate() {
        for &s in members {
            block_of[s as usize] = b as u32;
        }
    }
    let mut in_work = vec![true; blocks.len()];
    let mut work: Vec<u32> = (0..blocks.len() as u32).collect();
    let mut hits: Vec<Vec<u32>> = vec![Vec::new(); blocks.len()];
    let mut marked = vec![false; n + 1];
    let mut touched: Vec<u32> = Vec::new();
    while let Some(a) = work.pop() {
        in_work[a as usize] = false;
        let splitter = blocks[a as usize].clone();
        for c in 0..stride {
            for &t in &splitter {
                let k = t as usize * stride + c;
                for &s in &preds[start[k] as usize..start[k + 1] as usize] {
                    let b = block_of[s as usize] as usize;
                    if hits[b].is_empty() {
                        touched.push(b as u32);
                    }
                    hits[b].push(s);
                }
            }
            for b in touched.drain(..) {
                let b = b as usize;
                let xs = std::mem::take(&mut hits[b]);
                if xs.len() == blocks[b].len() {
                    continue;
                }
                for &s in &xs {
                    marked[s as usize] = true;
                }
                blocks[b].retain(|&s| !marked[s as usize]);
                let nb = blocks.len();
                for &s in &xs {
                    marked[s as usize] = false;
                    block_of[s as usize] = nb as u32;
                }
                let smaller_is_new = xs.len() <= blocks[b].len();
                blocks.push(xs);
                hits.push(Vec::new());
                in_work.push(false);
                let add = if in_work[b] || smaller_is_new { nb } else { b };
                if !in_work[add] {
                    in_work[add] = true;
                    work.push(add as u32);
                }
            }
        }
    }
    // Renumber blocks of live states in order of their first state (state 0 gets 0).
    let mut new_id = vec![DEAD; blocks.len()];
    let mut count = 0u32;
    for &b in &block_of[..n] {
        let b = b as usize;
        if new_id[b] == DEAD {
            new_id[b] = count;
            count += 1;
        }
    }
    let dead_block = block_of[n] as usize;
    let mut new_trans = vec![DEAD; count as usize * stride];
    let mut new_acc = vec![false; count as usize];
    for s in 0..n {
        let cs = new_id[block_of[s] as usize] as usize;
        new_acc[cs] = accepting[s];
        for c in 0..stride {
            let b = block_of[target(s, c)] as usize;
            new_trans[cs * stride + c] = if b == dead_block { DEAD } else { new_id[b] };
        }
    }
    (new_trans, new_acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_equivalent_states() {
        // One class (byte 'a'); states 0 -a-> 1 -a-> 2 -a-> 1, 1 and 2 accepting: 1 ≡ 2.
        let (t, a) = minimize(&[1, 2, 1], &[false, true, true], 1);
        assert_eq!(a, vec![false, true]);
        assert_eq!(t, vec![1, 1]);
        // Distinct futures stay apart: 0 -a-> 1 -a-> 2 (accepting), 2 -a-> dead.
        let (t, a) = minimize(&[1, 2, DEAD], &[false, false, true], 1);
        assert_eq!((t, a), (vec![1, 2, DEAD], vec![false, false, true]));
        // Two classes: 0 -x-> 1, 0 -y-> 2, 1 and 2 accepting with no exits: 1 ≡ 2.
        let (t, a) = minimize(&[1, 2, DEAD, DEAD, DEAD, DEAD], &[false, true, true], 2);
        assert_eq!((t, a), (vec![1, 1, DEAD, DEAD], vec![false, true]));
    }

    #[test]
    fn long_chains_minimize_quickly() {
        // a{n} as a chain with a duplicated tail: 0..n then n accepting; copies merge.
        let n = 20_000;
        let mut trans: Vec<u32> = (1..=n as u32).collect();
        trans.push(DEAD);
        let mut acc = vec![false; n + 1];
        acc[n] = true;
        let (t, a) = minimize(&trans, &acc, 1);
        assert_eq!(a.len(), n + 1);
        assert_eq!(t[n], DEAD);
    }

    /// Accepted strings over `stride` letters up to length `len`, as a bit vector.
    fn language(trans: &[u32], acc: &[bool], stride: usize, from: u32, len: usize) -> Vec<bool> {
        let mut out = Vec::new();
        let mut frontier = vec![Some(from)];
        for _ in 0..=len {
            out.extend(frontier.iter().map(|s| s.is_some_and(|s| acc[s as usize])));
            frontier = frontier
                .iter()
                .flat_map(|s| {
                    (0..stride).map(move |c| match s {
                        Some(s) if trans[*s as usize * stride + c] != DEAD => {
                            Some(trans[*s as usize * stride + c])
                        }
                        _ => None,
                    })
                })
                .collect();
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn same_language_and_minimal(
            n in 1usize..7,
            raw in proptest::collection::vec(0u32..8, 14),
            acc_bits in proptest::collection::vec(proptest::bool::ANY, 7),
        ) {
            let stride = 2;
            // Transitions: values >= n mean dead.
            let trans: Vec<u32> =
                raw[..n * stride].iter().map(|&t| if (t as usize) < n { t } else { DEAD }).collect();
            let acc = acc_bits[..n].to_vec();
            let (t2, a2) = minimize(&trans, &acc, stride);
            let len = n + 1;
            proptest::prop_assert_eq!(
                language(&trans, &acc, stride, 0, len),
                language(&t2, &a2, stride, 0, len)
            );
            // Minimal: states with a non-empty language are pairwise distinguishable.
            let langs: Vec<Vec<bool>> =
                (0..a2.len() as u32).map(|s| language(&t2, &a2, stride, s, len)).collect();
            for i in 0..langs.len() {
                for j in 0..i {
                    if langs[i].iter().any(|&x| x) && langs[j].iter().any(|&x| x) {
                        proptest::prop_assert_ne!(&langs[i], &langs[j]);
                    }
                }
            }
        }
    }
}
