//! The element-wise pieces of the llama block: RMSNorm, RoPE, biases, softmax, SiLU.

use crate::config::RopeStyle;
use sampler_core::exp::{exp32, exp64};

/// `out = x / sqrt(mean(x²) + eps) · w`, row by row (llama.cpp's `rms_norm` then `mul`).
pub(crate) fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let d = w.len();
    for (xr, or) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
        let scale = rms_scale(xr, eps);
        for ((o, &v), &g) in or.iter_mut().zip(xr).zip(w) {
            *o = v * scale * g;
        }
    }
}

/// [`rms_norm`] in place, rows of `w.len()` (qwen3's per-head norm of q and k).
pub(crate) fn rms_norm_in_place(x: &mut [f32], w: &[f32], eps: f32) {
    let d = w.len();
    for xr in x.chunks_exact_mut(d) {
        let scale = rms_scale(xr, eps);
        for (v, &g) in xr.iter_mut().zip(w) {
            *v = *v * scale * g;
        }
    }
}

/// `1 / sqrt(mean(x²) + eps)`, the mean in f64 (as llama.cpp sums).
fn rms_scale(x: &[f32], eps: f32) -> f32 {
    let mean_sq = x.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>() / x.len() as f64;
    (1.0 / (mean_sq + eps as f64).sqrt()) as f32
}

/// Cosines and sines of RoPE at position `pos`: pair `i` turns by `pos · freqs[i]`
/// ([`crate::LlamaConfig::rope_freqs`]).
pub(crate) fn rope_angles(pos: usize, freqs: &[f64]) -> Vec<(f32, f32)> {
    freqs
        .iter()
        .map(|&f| {
            let theta = pos as f64 * f;
            (theta.cos() as f32, theta.sin() as f32)
        })
        .collect()
}

/// Rotates each head of `x` (heads of `head_dim`) by RoPE, pairing dimensions as `style`
/// says: `(2i, 2i+1)` in llama.cpp's normal mode, `(i, i + n_rot/2)` in its neox mode.
/// (The GGUF converter permutes the q/k rows of Hugging Face llama checkpoints so that
/// the normal mode equals their rotate-half form; qwen2's rows are left as they are.)
pub(crate) fn rope(x: &mut [f32], head_dim: usize, angles: &[(f32, f32)], style: RopeStyle) {
    let half = angles.len();
    for head in x.chunks_exact_mut(head_dim) {
        for (i, &(cos, sin)) in angles.iter().enumerate() {
            let (ia, ib) = match style {
                RopeStyle::Adjacent => (2 * i, 2 * i + 1),
                RopeStyle::Halves => (i, i + half),
            };
            let (a, b) = (head[ia], head[ib]);
            head[ia] = a * cos - b * sin;
            head[ib] = a * sin + b * cos;
        }
    }
}

/// Adds `bias` to each row of `x` (rows of `bias.len()`).
pub(crate) fn add_bias(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        for (v, &b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
}

/// In-place softmax (the exponentials by [`exp32`], in one vectorizable pass; the sum after).
pub(crate) fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for v in x.iter_mut() {
        *v = exp32(*v - max);
    }
    let sum: f32 = x.iter().sum();
    for v in x.iter_mut() {
        *v /= sum;
    }
}

/// `silu(g) · u`, element-wise into `g`.
pub(crate) fn swiglu(g: &mut [f32], u: &[f32]) {
    for (a, &b) in g.iter_mut().zip(u) {
        *a = *a / (1.0 + exp32(-*a)) * b;
    }
}

/// Lanes of [`log_softmax`]'s max and sum: independent accumulators, so both loops run as
/// vector code (one running float would make each step wait on the last).
const LANES: usize = 8;

/// Natural-log softmax in f64 (each `e^(v − max)` by [`exp64`]).
pub(crate) fn log_softmax(logits: &[f32]) -> Vec<f64> {
    let (chunks, tail) = logits.as_chunks::<LANES>();
    let mut m = [f32::NEG_INFINITY; LANES];
    for c in chunks {
        for (m, &v) in m.iter_mut().zip(c) {
            *m = if v > *m { v } else { *m };
        }
    }
    let max = tail
        .iter()
        .chain(&m)
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    let mut sums = [0f64; LANES];
    for c in chunks {
        for (s, &v) in sums.iter_mut().zip(c) {
            *s += exp64(f64::from(v) - f64::from(max));
        }
    }
    let max = f64::from(max);
    let sum: f64 =
        sums.iter().sum::<f64>() + tail.iter().map(|&v| exp64(f64::from(v) - max)).sum::<f64>();
    let lse = max + sum.ln();
    logits.iter().map(|&v| f64::from(v) - lse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rope_at_zero_is_identity_and_preserves_norm() {
        let mut x: Vec<f32> = (0..8).map(|i| i as f32).collect();
        let orig = x.clone();
        let freqs: Vec<f64> = (0..4)
            .map(|i| 10000f64.powf(-2.0 * i as f64 / 8.0))
            .collect();
        rope(&mut x, 8, &rope_angles(0, &freqs), RopeStyle::Adjacent);
        assert_eq!(x, orig);
        rope(&mut x, 8, &rope_angles(5, &freqs), RopeStyle::Adjacent);
        let n0: f32 = orig.iter().map(|v| v * v).sum();
        let n1: f32 = x.iter().map(|v| v * v).sum();
        assert!((n0 - n1).abs() < 1e-3);
        // Pair 0 turns by exactly 5 radians.
        let (c, s) = (5f32.cos(), 5f32.sin());
        assert!(
            (x[0] - (0.0 * c - 1.0 * s)).abs() < 1e-5 && (x[1] - (0.0 * s + 1.0 * c)).abs() < 1e-5
        );
    }

    #[test]
    fn rope_halves_pairs_i_with_i_plus_half() {
        // Only pair 0 turns (the others have frequency 0): dimensions 0 and 2 of a
        // 4-wide head in neox mode, 0 and 1 in normal mode.
        let angles = rope_angles(1, &[std::f64::consts::FRAC_PI_2, 0.0]);
        let mut x = [1.0f32, 2.0, 3.0, 4.0];
        rope(&mut x, 4, &angles, RopeStyle::Halves);
        let want = [-3.0f32, 2.0, 1.0, 4.0];
        assert!(
            x.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6),
            "{x:?}"
        );
        let mut y = [1.0f32, 2.0, 3.0, 4.0];
        rope(&mut y, 4, &angles, RopeStyle::Adjacent);
        let want = [-2.0f32, 1.0, 3.0, 4.0];
        assert!(
            y.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6),
            "{y:?}"
        );
    }

    #[test]
    fn norms_and_softmaxes() {
        let mut out = [0f32; 2];
        rms_norm(&[3.0, 4.0], &[1.0, 2.0], 0.0, &mut out);
        let r = (12.5f32).sqrt();
        assert!((out[0] - 3.0 / r).abs() < 1e-6 && (out[1] - 8.0 / r).abs() < 1e-6);
        let mut p = [1.0, 2.0, 3.0];
        softmax(&mut p);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        let lp = log_softmax(&[1.0, 2.0, 3.0]);
        assert!((lp.iter().map(|v| v.exp()).sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
