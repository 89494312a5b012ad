//! Building the tensorized automaton from a byte automaton and a token trie.

use super::TensorizedAutomaton;
use crate::limits::{LimitExceeded, Limits};
use crate::{ByteAutomaton, TokenTrie, Vocabulary};
use std::collections::HashMap;

/// A start time, or nothing on wasm32 (where `Instant::now` panics).
struct Clock(#[cfg(not(target_arch = "wasm32"))] std::time::Instant);

impl Clock {
    fn start() -> Self {
        Clock(
            #[cfg(not(target_arch = "wasm32"))]
            std::time::Instant::now(),
        )
    }
    fn elapsed(&self) -> std::time::Duration {
        #[cfg(not(target_arch = "wasm32"))]
        return self.0.elapsed();
        #[cfg(target_arch = "wasm32")]
        std::time::Duration::ZERO
    }
}

impl TensorizedAutomaton {
    /// Tensorizes `automaton` over `vocab` under `limits`.
    pub fn new<A: ByteAutomaton>(
        automaton: &A,
        vocab: &Vocabulary,
        limits: &Limits,
    ) -> Result<Self, LimitExceeded> {
        Self::build_indexed(automaton, &TokenTrie::new(vocab), vocab, limits).map(|(t, _)| t)
    }

    /// Tensorizes `automaton` over the tokens of `trie`, also returning the tensor index
    /// of every automaton state reached at a token boundary.
    ///
    /// States are enumerated by BFS over token transitions; an automaton with more than
    /// `limits.max_states` such states (or infinitely many) is refused.
    pub fn build_indexed<A: ByteAutomaton>(
        automaton: &A,
        trie: &TokenTrie,
        vocab: &Vocabulary,
        limits: &Limits,
    ) -> Result<(Self, HashMap<A::State, u32>), LimitExceeded> {
        let clock = Clock::start();
        let v = vocab.len();
        let w = v.div_ceil(32);
        let eos = vocab.eos();
        let mut index: HashMap<A::State, u32> = HashMap::new();
        let mut order = vec![automaton.initial()];
        index.insert(automaton.initial(), 0);
        let (mut edge_src, mut edge_dst, mut bf) = (Vec::new(), Vec::new(), Vec::new());
        let mut out_start = Vec::new();
        let mut accepting = Vec::new();
        const FINAL: u32 = u32::MAX;
        let mut i = 0;
        while i < order.len() {
            let s = order[i];
            out_start.push(edge_src.len() as u32);
            let mut edge_of: HashMap<u32, usize> = HashMap::new();
            let mut err = None;
            trie.walk(automaton, s, |t, next| {
                if err.is_some() {
                    return;
                }
                let n = order.len() as u32;
                let dst = *index.entry(next).or_insert_with(|| {
                    order.push(next);
                    n
                });
                let e = match edge_of.get(&dst) {
                    Some(&e) => e,
                    None => match new_edge(edge_src.len(), &mut bf, w, limits) {
                        Ok(e) => {
                            edge_src.push(i as u32);
                            edge_dst.push(dst);
                            edge_of.insert(dst, e);
                            e
                        }
                        Err(x) => {
                            err = Some(x);
                            return;
                        }
                    },
                };
                bf[e * w + t as usize / 32] |= 1 << (t % 32);
            });
            if let Some(x) = err {
                return Err(x);
            }
            // +1 for the final state.
            if order.len() + 1 > limits.max_states {
                return Err(LimitExceeded {
                    limit: "max_states",
                    max: limits.max_states,
                    reached: Some(order.len() + 1),
                });
            }
            let acc = automaton.is_accepting(s);
            accepting.push(acc);
            if acc && (eos as usize) < v {
                let e = new_edge(edge_src.len(), &mut bf, w, limits)?;
                edge_src.push(i as u32);
                edge_dst.push(FINAL);
                bf[e * w + eos as usize / 32] |= 1 << (eos % 32);
            }
            i += 1;
        }
        let final_state = order.len() as u32;
        for d in edge_dst.iter_mut().filter(|d| **d == FINAL) {
            *d = final_state;
        }
        accepting.push(false);
        out_start.push(edge_src.len() as u32);
        out_start.push(edge_src.len() as u32);
        let num_states = order.len() + 1;
        let dist = super::budget::distances(num_states, final_state, &edge_src, &edge_dst);
        let t = TensorizedAutomaton {
            num_states,
            initial: 0,
            final_state,
            accepting,
            edge_src,
            edge_dst,
            out_start,
            bf,
            words_per_row: w,
            vocab_size: v,
            eos,
            dist,
            compile_time: clock.elapsed(),
        };
        Ok((t, index))
    }
}

/// Appends a zero row to B_f after checking the edge and byte limits; returns its index.
fn new_edge(
    e: usize,
    bf: &mut Vec<u32>,
    w: usize,
    limits: &Limits,
) -> Result<usize, LimitExceeded> {
    if e + 1 > limits.max_edges {
        return Err(LimitExceeded {
            limit: "max_edges",
            max: limits.max_edges,
            reached: Some(e + 1),
        });
    }
    let bytes = (e + 1) * w * 4;
    if bytes > limits.max_bf_bytes {
        return Err(LimitExceeded {
            limit: "max_bf_bytes",
            max: limits.max_bf_bytes,
            reached: Some(bytes),
        });
    }
    bf.resize((e + 1) * w, 0);
    Ok(e)
}
