//! [`Step`]: the per-run uniform every forward kernel reads (tokens, where each token sits
//! in the KV cache, first token with logits).

use crate::gpu::Gpu;

/// Most tokens one run of the kernels takes (the size of [`Step`]'s table of places).
pub const STEP_TOKENS: usize = 64;

/// Where one token of a run sits: its position in its own sequence (the RoPE angle, and
/// how many cache rows it attends to, plus one) and the cache row of that sequence's
/// position 0. A KV cache holding several sequences side by side ("slots") gives each its
/// own `base`; the token's keys and values go to row `base + pos`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Place {
    /// Position in the token's sequence.
    pub pos: u32,
    /// Cache row of the sequence's position 0.
    pub base: u32,
}

/// Values of one run of the kernels; written to its uniform buffer before each submit.
///
/// With the fields alone the run's tokens are one sequence continuing the cache from row
/// 0: token `t` sits at position `n_past + t`. [`Step::write_placed`] gives every token its
/// own [`Place`] instead (tokens of several sequences in one run). Only the first
/// [`STEP_TOKENS`] tokens have places: a run of more may go through the kernels that read
/// nothing but `n` and `first` (the plain products: burn's prefill), never through those
/// that read places (attention, RoPE, the cache writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Step {
    /// Tokens in this run (at most [`STEP_TOKENS`] for the kernels that read places).
    pub n: u32,
    /// Positions already in the KV cache.
    pub n_past: u32,
    /// First token whose output-head row is computed.
    pub first: u32,
}

/// WGSL declaration of the `Step` struct, prepended to kernels that read it.
pub(crate) const WGSL: &str = include_str!("wgsl/step.wgsl");

impl Step {
    /// A uniform buffer holding this step.
    pub fn buffer(&self, gpu: &Gpu) -> wgpu::Buffer {
        gpu.uniform("step", &self.uniform_words())
    }

    /// The uniform's words, for a caller that makes its own buffer (burn's runtime).
    pub fn uniform_words(&self) -> Vec<u32> {
        self.words(&self.places())
    }

    /// Queues a write of this step into `buffer` (made by [`Step::buffer`]).
    pub fn write(&self, gpu: &Gpu, buffer: &wgpu::Buffer) {
        gpu.write_words(buffer, 0, &self.words(&self.places()));
    }

    /// Queues a write of a run of `places.len()` tokens, token `t` at `places[t]`, the
    /// output head from token `first` (`n` and `n_past` are not read).
    pub fn write_placed(&self, gpu: &Gpu, buffer: &wgpu::Buffer, places: &[Place]) {
        let step = Step {
            n: places.len() as u32,
            ..*self
        };
        gpu.write_words(buffer, 0, &step.words(places));
    }

    /// The places of a one-sequence run.
    fn places(&self) -> Vec<Place> {
        (0..self.n.min(STEP_TOKENS as u32))
            .map(|t| Place {
                pos: self.n_past + t,
                base: 0,
            })
            .collect()
    }

    /// The uniform's words: the header, then one `vec4<u32>` (pos, base, 0, 0) per token.
    fn words(&self, places: &[Place]) -> Vec<u32> {
        assert!(
            places.len() <= STEP_TOKENS,
            "a run takes at most {STEP_TOKENS} tokens"
        );
        let mut w = vec![0u32; 4 + 4 * STEP_TOKENS];
        w[..4].copy_from_slice(&[self.n, self.n_past, self.first, 0]);
        for (t, p) in places.iter().enumerate() {
            w[4 + 4 * t] = p.pos;
            w[5 + 4 * t] = p.base;
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The WGSL table of places is as long as [`STEP_TOKENS`] says.
    #[test]
    fn the_wgsl_table_holds_step_tokens() {
        assert!(WGSL.contains(&format!("array<vec4<u32>, {STEP_TOKENS}>")));
    }

    /// A one-sequence step places token `t` at `n_past + t` from row 0.
    #[test]
    fn a_one_sequence_step_continues_the_cache() {
        let s = Step {
            n: 3,
            n_past: 5,
            first: 2,
        };
        let w = s.words(&s.places());
        assert_eq!(&w[..4], &[3, 5, 2, 0]);
        assert_eq!(&w[4..16], &[5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0]);
        assert!(w[16..].iter().all(|&x| x == 0));
    }
}
