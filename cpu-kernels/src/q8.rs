//! Activations quantized to 8 bits per block of 32, for the integer dot products.

/// 32 activations as `d·q`, `q` in `-127..=127`, with `s = d·Σq` (what a Q4_1 block's
/// minimum multiplies). llama.cpp's `block_q8_1`, with f32 scales.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
pub struct Q8Block {
    /// Scale: the block's largest magnitude over 127.
    pub d: f32,
    /// `d · Σ qs`.
    pub s: f32,
    /// The codes.
    pub qs: [i8; 32],
}

/// Quantizes `x` (a multiple of 32 long) into `out`, one block per 32 values: round to
/// nearest, ties away from zero. The same scalar code on every target, so all kernels
/// see the same codes.
pub fn quantize_q8(x: &[f32], out: &mut Vec<Q8Block>) {
    out.clear();
    out.extend(x.chunks_exact(32).map(|xb| {
        let amax = xb.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        let mut qs = [0i8; 32];
        let mut sum = 0i32;
        for (q, &v) in qs.iter_mut().zip(xb) {
            // |v·id| ≤ 127 up to rounding; the clamp keeps a NaN-free input in range.
            *q = (v * id).round().clamp(-127.0, 127.0) as i8;
            sum += *q as i32;
        }
        Q8Block {
            d,
            s: d * sum as f32,
            qs,
        }
    }));
}

/// Sums of each block of 32 values (what a Q4_1 block's minimum multiplies).
pub fn block_sums(x: &[f32], out: &mut Vec<f32>) {
    out.clear();
    out.extend(x.chunks_exact(32).map(|b| b.iter().sum::<f32>()));
}
