//! Forward vectors α, backward budgets β, and the budget-aware mask (docs/samplers.md):
//! m_t(v) = OR_e [(T_outᵀα_{t−1})_e ∧ (T_in β_t)_e ∧ B_f[e,v]].

use super::TensorizedAutomaton;
use crate::{TokenId, TokenSet};

/// Fewest edges from each state to `final_state` (reverse BFS); `u32::MAX` if none.
pub(super) fn distances(n: usize, final_state: u32, src: &[u32], dst: &[u32]) -> Vec<u32> {
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (&s, &d) in src.iter().zip(dst) {
        preds[d as usize].push(s);
    }
    let mut dist = vec![u32::MAX; n];
    dist[final_state as usize] = 0;
    let mut queue = std::collections::VecDeque::from([final_state]);
    while let Some(t) = queue.pop_front() {
        for &p in &preds[t as usize] {
            if dist[p as usize] == u32::MAX {
                dist[p as usize] = dist[t as usize] + 1;
                queue.push_back(p);
            }
        }
    }
    dist
}

impl TensorizedAutomaton {
    /// The one-hot vector of the initial state, α_0.
    pub fn initial_alpha(&self) -> Vec<bool> {
        self.one_hot(self.initial)
    }

    /// The one-hot vector of state `s` (all false when `s` is out of range).
    pub fn one_hot(&self, s: u32) -> Vec<bool> {
        let mut a = vec![false; self.num_states];
        if let Some(x) = a.get_mut(s as usize) {
            *x = true;
        }
        a
    }

    /// β_k: the states that reach the final state within `k` tokens (EOS counted).
    pub fn beta(&self, k: usize) -> Vec<bool> {
        self.dist.iter().map(|&d| (d as usize) <= k).collect()
    }

    /// Whether token `v` labels edge `e`.
    pub fn labels(&self, e: usize, v: TokenId) -> bool {
        let w = self.words_per_row;
        (v as usize) < self.vocab_size && (self.bf[e * w + v as usize / 32] >> (v % 32)) & 1 == 1
    }

    /// `α_t = 1{T_inᵀ(T_outᵀα_{t−1} ∘ B_f[:,v])}`: the states after token `v`.
    pub fn forward(&self, alpha: &[bool], v: TokenId) -> Vec<bool> {
        let mut next = vec![false; self.num_states];
        for e in 0..self.num_edges() {
            if alpha.get(self.edge_src[e] as usize) == Some(&true) && self.labels(e, v) {
                next[self.edge_dst[e] as usize] = true;
            }
        }
        next
    }

    /// 1 for every edge leaving a state of `alpha` into a state that completes within
    /// `remaining - 1` further tokens (`remaining` counts the next token and the EOS).
    /// This is (T_outᵀα)_e ∧ (T_in β_{remaining−1})_e, the input of the mask kernel.
    pub fn edge_flags(&self, alpha: &[bool], remaining: usize) -> Vec<u32> {
        let mut flags = vec![0u32; self.num_edges()];
        if remaining == 0 {
            return flags;
        }
        let k = remaining - 1;
        for (s, _) in alpha.iter().enumerate().filter(|(_, a)| **a) {
            let (lo, hi) = match (self.out_start.get(s), self.out_start.get(s + 1)) {
                (Some(&lo), Some(&hi)) => (lo as usize, hi as usize),
                _ => continue,
            };
            for (f, &d) in flags[lo..hi].iter_mut().zip(&self.edge_dst[lo..hi]) {
                if (self.dist[d as usize] as usize) <= k {
                    *f = 1;
                }
            }
        }
        flags
    }

    /// CPU reference of the mask kernel: word `w` of the mask is the OR over edges `e`
    /// with `flags[e] != 0` of `bf[e * words_per_row + w]`.
    pub fn mask_from_edge_flags(&self, flags: &[u32]) -> Vec<u32> {
        let w = self.words_per_row;
        let mut out = vec![0u32; w];
        for (e, _) in flags
            .iter()
            .enumerate()
            .take(self.num_edges())
            .filter(|(_, f)| **f != 0)
        {
            for (o, b) in out.iter_mut().zip(&self.bf[e * w..(e + 1) * w]) {
                *o |= *b;
            }
        }
        out
    }

    /// The budget-aware mask words from the single state `s` (the fast path: only the
    /// edges leaving `s` are read); all zero when `s` is out of range.
    pub fn state_mask_words(&self, s: u32, remaining: usize) -> Vec<u32> {
        if remaining == 0 {
            return vec![0; self.words_per_row];
        }
        self.or_out_rows(s, |d| (self.dist[d as usize] as usize) < remaining)
    }

    /// The plain mask words from state `s`: every token whose bytes keep the byte
    /// automaton alive, and EOS when `s` accepts (the OR of every edge leaving `s`).
    pub fn live_mask_words(&self, s: u32) -> Vec<u32> {
        self.or_out_rows(s, |_| true)
    }

    /// OR of the B_f rows of the edges leaving `s` whose destination passes `keep`.
    fn or_out_rows(&self, s: u32, keep: impl Fn(u32) -> bool) -> Vec<u32> {
        let w = self.words_per_row;
        let mut out = vec![0u32; w];
        let (lo, hi) = match (
            self.out_start.get(s as usize),
            self.out_start.get(s as usize + 1),
        ) {
            (Some(&lo), Some(&hi)) => (lo as usize, hi as usize),
            _ => return out,
        };
        for e in lo..hi {
            if keep(self.edge_dst[e]) {
                for (o, b) in out.iter_mut().zip(&self.bf[e * w..(e + 1) * w]) {
                    *o |= *b;
                }
            }
        }
        out
    }

    /// The budget-aware mask from the states of `alpha` with `remaining` tokens left
    /// (`usize::MAX` for no budget).
    pub fn budget_mask(&self, alpha: &[bool], remaining: usize) -> TokenSet {
        let words = self.mask_from_edge_flags(&self.edge_flags(alpha, remaining));
        TokenSet::from_u32_words(&words, self.vocab_size)
    }
}

#[cfg(test)]
mod tests {
    use crate::limits::Limits;
    use crate::regex::RegexAutomaton;
    use crate::{TensorizedAutomaton, Vocabulary};

    fn vocab(words: &[&str]) -> Vocabulary {
        let mut t: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
        t.push(b"</s>".to_vec());
        let eos = (t.len() - 1) as u32;
        Vocabulary::new(t, eos, &[])
    }

    #[test]
    fn edges_group_tokens_by_destination() {
        // tokens: a b ab EOS ; regex (ab)+
        let v = vocab(&["a", "b", "ab"]);
        let a = RegexAutomaton::new("(ab)+").unwrap();
        let t = TensorizedAutomaton::new(&a, &v, &Limits::default()).unwrap();
        // states: q0 (start), q1 (after a), q2 (after ab, accepting), final.
        assert_eq!(t.num_states, 4);
        assert_eq!(t.dist[t.initial as usize], 2); // "ab" then EOS
        let m = t.budget_mask(&t.initial_alpha(), 2);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![2]);
        let m = t.budget_mask(&t.initial_alpha(), 3);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![0, 2]);
        assert!(t.budget_mask(&t.initial_alpha(), 1).is_empty());
        assert!(t.budget_mask(&t.initial_alpha(), 0).is_empty());
        let after = t.forward(&t.initial_alpha(), 2);
        let m = t.budget_mask(&after, 1);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![3]);
        assert_eq!(t.words_per_row, 1);
        assert_eq!(t.bf_bytes(), t.num_edges() * 4);
    }

    #[test]
    fn limits_name_the_limit_and_size() {
        let v = vocab(&["a", "b", "ab"]);
        let a = RegexAutomaton::new("(ab)+").unwrap();
        let e = TensorizedAutomaton::new(&a, &v, &Limits::default().with_max_states(3));
        assert_eq!(
            e.unwrap_err().to_string(),
            "size limit exceeded: max_states = 3 (reached 4); raise the limit or simplify the constraint"
        );
        let e = TensorizedAutomaton::new(&a, &v, &Limits::default().with_max_edges(2));
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("max_edges = 2 (reached 3)")
        );
        let e = TensorizedAutomaton::new(&a, &v, &Limits::default().with_max_bf_bytes(8));
        assert!(
            e.unwrap_err()
                .to_string()
                .contains("max_bf_bytes = 8 (reached 12)")
        );
    }

    #[test]
    fn kernel_reference_ors_active_rows() {
        let v = vocab(&["a", "b", "ab"]);
        let a = RegexAutomaton::new("(ab)+").unwrap();
        let t = TensorizedAutomaton::new(&a, &v, &Limits::default()).unwrap();
        let all = vec![1u32; t.num_edges()];
        let m = t.mask_from_edge_flags(&all);
        assert_eq!(m, vec![0b1111]);
        assert_eq!(t.mask_from_edge_flags(&[]), vec![0]);
        assert!(t.edge_flags(&[true; 99], usize::MAX).len() == t.num_edges());
        for s in 0..t.num_states as u32 + 1 {
            for r in 0..5 {
                let via_flags = t.mask_from_edge_flags(&t.edge_flags(&t.one_hot(s), r));
                assert_eq!(t.state_mask_words(s, r), via_flags, "state {s} budget {r}");
            }
            let all = t.mask_from_edge_flags(&t.edge_flags(&t.one_hot(s), usize::MAX));
            assert_eq!(t.live_mask_words(s), all);
        }
    }
}
