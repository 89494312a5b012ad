//! Moore partition refinement of a transition table, so equivalent states merge.
//!
//! regex-automata's own minimizer keeps states apart that differ only in delayed-match
//! bookkeeping; under full-match semantics those are equivalent, so we minimize again.

use std::collections::HashMap;

/// Marks a missing (dead) transition.
pub(crate) const DEAD: u32 = u32::MAX;

/// Merges equivalent states of `(trans, accepting)` (`stride` classes per state, state 0
/// initial). Returns the new table and accepting flags, with the initial state still 0.
pub(crate) fn minimize(trans: &[u32], accepting: &[bool], stride: usize) -> (Vec<u32>, Vec<bool>) {
    let n = accepting.len();
    let mut class: Vec<u32> = renumber(accepting.iter().map(|&a| vec![a as u32]));
    let mut count = distinct(&class);
    loop {
        let sigs = (0..n).map(|s| {
            let mut sig = Vec::with_capacity(stride + 1);
            sig.push(class[s]);
            sig.extend(
                trans[s * stride..(s + 1) * stride]
                    .iter()
                    .map(|&t| if t == DEAD { DEAD } else { class[t as usize] }),
            );
            sig
        });
        let next = renumber(sigs);
        let next_count = distinct(&next);
        class = next;
        if next_count == count {
            break;
        }
        count = next_count;
    }
    let mut new_trans = vec![DEAD; count * stride];
    let mut new_acc = vec![false; count];
    for s in 0..n {
        let c = class[s] as usize;
        new_acc[c] = accepting[s];
        for k in 0..stride {
            let t = trans[s * stride + k];
            new_trans[c * stride + k] = if t == DEAD { DEAD } else { class[t as usize] };
        }
    }
    (new_trans, new_acc)
}

/// Ids in first-seen order of the signatures (so state 0 gets class 0).
fn renumber(sigs: impl Iterator<Item = Vec<u32>>) -> Vec<u32> {
    let mut ids: HashMap<Vec<u32>, u32> = HashMap::new();
    sigs.map(|sig| {
        let n = ids.len() as u32;
        *ids.entry(sig).or_insert(n)
    })
    .collect()
}

fn distinct(class: &[u32]) -> usize {
    class.iter().max().map_or(0, |&m| m as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_equivalent_states() {
        // One class (byte 'a'); states 0 -a-> 1 -a-> 2 -a-> 1, 1 and 2 accepting: 1 ≡ 2.
        let trans = vec![1, 2, 1];
        let (t, a) = minimize(&trans, &[false, true, true], 1);
        assert_eq!(a, vec![false, true]);
        assert_eq!(t, vec![1, 1]);
        // Distinct futures stay apart: 0 -a-> 1 -a-> 2 (accepting), 2 -a-> dead.
        let (t, a) = minimize(&[1, 2, DEAD], &[false, false, true], 1);
        assert_eq!((t.len(), a.len()), (3, 3));
    }
}
