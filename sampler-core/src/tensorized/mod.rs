//! The tensorized automaton (seed 001 §3.1): token-level transitions as edge bitsets, for
//! budget-aware masks on the CPU and in the WGSL mask kernel.
//!
//! States are the automaton's states reachable at token boundaries plus one final state
//! entered by EOS. Edges group the tokens by (source, destination) pair; `bf` holds one
//! row of `words_per_row` u32 words per edge (bit `v % 32` of word `v / 32` is set when
//! token `v` labels the edge). `T_out` and `T_in` are the edge endpoints `edge_src` and
//! `edge_dst`.

mod budget;
mod build;

use crate::TokenId;
use std::time::Duration;

/// A finite automaton lifted to tokens, in the tensor form of seed 001 §3.1.
#[derive(Clone, Debug)]
pub struct TensorizedAutomaton {
    /// Number of states, the final state included.
    pub num_states: usize,
    /// Index of the initial state.
    pub initial: u32,
    /// Index of the final state (entered only by EOS, no outgoing edges).
    pub final_state: u32,
    /// Whether each state is accepting (EOS allowed); the final state is not.
    pub accepting: Vec<bool>,
    /// Source state of each edge (`T_out`), edges sorted by source.
    pub edge_src: Vec<u32>,
    /// Destination state of each edge (`T_in`).
    pub edge_dst: Vec<u32>,
    /// `out_start[s]..out_start[s + 1]` are the edges leaving state `s`.
    pub out_start: Vec<u32>,
    /// The edge-by-token bitset B_f, `edge_src.len() * words_per_row` words.
    pub bf: Vec<u32>,
    /// Words per row of `bf`: `ceil(vocab_size / 32)`.
    pub words_per_row: usize,
    /// Vocabulary size (EOS included).
    pub vocab_size: usize,
    /// The EOS token.
    pub eos: TokenId,
    /// Fewest tokens (EOS counted) from each state to the final state; `u32::MAX` when
    /// the final state is unreachable. β_k(s) holds exactly when `dist[s] <= k`.
    pub dist: Vec<u32>,
    /// Wall-clock time the compilation took (zero on wasm32, which has no clock).
    pub compile_time: Duration,
}

impl TensorizedAutomaton {
    /// Number of edges E.
    pub fn num_edges(&self) -> usize {
        self.edge_src.len()
    }

    /// Size of B_f in bytes.
    pub fn bf_bytes(&self) -> usize {
        self.bf.len() * 4
    }

    /// The tokens edge `e` carries (its row of B_f), in increasing order.
    pub fn edge_tokens(&self, e: usize) -> impl Iterator<Item = usize> + '_ {
        let row = &self.bf[e * self.words_per_row..(e + 1) * self.words_per_row];
        row.iter().enumerate().flat_map(|(wi, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(wi * 32 + b)
            })
        })
    }
}
