//! The 32-weight block types besides Q4_1 and Q8_0 (ggml's `block_q4_0`, `block_q5_0`,
//! `block_q5_1`; `dequantize_row_q4_0` … in `ggml/src/ggml-quants.c`), and BF16.
//!
//! In every one, byte `j` of the nibbles holds weight `j` (low nibble) and weight
//! `j + 16` (high nibble); Q5 types keep each weight's fifth bit in the 32-bit `qh`.

use crate::f16_to_f32;

/// Bytes per Q4_0 block (32 weights: f16 `d`, 16 bytes of nibbles; `w = d·(q − 8)`).
pub const Q4_0_BYTES: usize = 18;
/// Bytes per Q5_0 block (f16 `d`, u32 `qh`, 16 bytes of nibbles; `w = d·(q − 16)`).
pub const Q5_0_BYTES: usize = 22;
/// Bytes per Q5_1 block (f16 `d`, f16 `m`, u32 `qh`, 16 bytes; `w = d·q + m`).
pub const Q5_1_BYTES: usize = 24;

/// The half at `b[at..at + 2]` as f32.
#[inline]
pub(crate) fn half_at(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// Dequantizes Q4_0 data (whole blocks) into `out`, 32 floats per block.
#[inline]
pub fn dequantize_q4_0(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<Q4_0_BYTES>();
    for (b, o) in blocks.iter().zip(out.chunks_exact_mut(32)) {
        let d = half_at(b, 0);
        for j in 0..16 {
            o[j] = ((b[2 + j] & 0x0F) as i32 - 8) as f32 * d;
            o[j + 16] = ((b[2 + j] >> 4) as i32 - 8) as f32 * d;
        }
    }
}

/// The five-bit codes of a Q5 block: nibble `j` with bit `j` of `qh` as its fifth bit.
/// Fixed-size arrays and lane-wise shifts, so the loop compiles to vector code.
#[inline(always)]
fn q5_codes(qh: u32, qs: &[u8; 16]) -> [u32; 32] {
    let mut q = [0u32; 32];
    for j in 0..16 {
        q[j] = (qs[j] & 0x0F) as u32 | (((qh >> j) & 1) << 4);
        q[j + 16] = (qs[j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4);
    }
    q
}

/// A Q5 block's `qh` and nibbles, from byte `at` on.
#[inline(always)]
fn q5_parts(b: &[u8], at: usize) -> (u32, &[u8; 16]) {
    let qh = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let qs = b[at + 4..at + 20].try_into().expect("16 nibble bytes");
    (qh, qs)
}

/// Dequantizes Q5_0 data (whole blocks) into `out`, 32 floats per block.
#[inline]
pub fn dequantize_q5_0(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<Q5_0_BYTES>();
    let (outs, _) = out.as_chunks_mut::<32>();
    for (b, o) in blocks.iter().zip(outs) {
        let d = half_at(b, 0);
        let (qh, qs) = q5_parts(b, 2);
        let q = q5_codes(qh, qs);
        for (o, &q) in o.iter_mut().zip(&q) {
            *o = (q as i32 - 16) as f32 * d;
        }
    }
}

/// Dequantizes Q5_1 data (whole blocks) into `out`, 32 floats per block.
#[inline]
pub fn dequantize_q5_1(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<Q5_1_BYTES>();
    let (outs, _) = out.as_chunks_mut::<32>();
    for (b, o) in blocks.iter().zip(outs) {
        let (d, m) = (half_at(b, 0), half_at(b, 2));
        let (qh, qs) = q5_parts(b, 4);
        let q = q5_codes(qh, qs);
        for (o, &q) in o.iter_mut().zip(&q) {
            *o = q as f32 * d + m;
        }
    }
}

/// Q4_0 blocks rewritten as Q4_1 blocks with the same weights, exactly: `d·(q − 8)` is
/// `d·q + m` with `m = −8·d`, which an f16 holds exactly (a power-of-two multiple) unless
/// it overflows. `None` when some block's `m` would not be finite (then dequantize). Lets
/// Q4_0 matrices run on the Q4_1 kernels.
pub fn q4_0_as_q4_1(data: &[u8]) -> Option<Vec<u8>> {
    let (blocks, _) = data.as_chunks::<Q4_0_BYTES>();
    let mut out = Vec::with_capacity(blocks.len() * crate::BlockQ4_1::BYTES);
    for b in blocks {
        let d = u16::from_le_bytes([b[0], b[1]]);
        let m = crate::f32_to_f16_exact(-8.0 * f16_to_f32(d))?;
        out.extend_from_slice(&d.to_le_bytes());
        out.extend_from_slice(&m.to_le_bytes());
        out.extend_from_slice(&b[2..]);
    }
    Some(out)
}

/// Converts little-endian bfloat16 data into `out` (the top half of an f32, exact).
#[inline]
pub fn dequantize_bf16(data: &[u8], out: &mut [f32]) {
    let (halves, _) = data.as_chunks::<2>();
    for (h, o) in halves.iter().zip(out.iter_mut()) {
        *o = f32::from_bits((u16::from_le_bytes(*h) as u32) << 16);
    }
}
