//! ggml's K-quants: super-blocks of 256 weights split into sub-blocks with their own
//! quantized scales (`block_q2_K` … `block_q6_K` in `ggml/src/ggml-common.h`,
//! `dequantize_row_q2_K` … in `ggml/src/ggml-quants.c`). Every product is taken in f32 in
//! ggml's order.

use crate::legacy::half_at;

/// Weights per K-quant super-block.
pub const QK_K: usize = 256;
/// Bytes per Q2_K block: 16 scale/min bytes, 64 bytes of 2-bit codes, f16 `d`, `dmin`.
pub const Q2_K_BYTES: usize = 84;
/// Bytes per Q3_K block: 32 bytes of high bits, 64 of 2-bit codes, 12 of 6-bit scales,
/// f16 `d`.
pub const Q3_K_BYTES: usize = 110;
/// Bytes per Q4_K block: f16 `d`, `dmin`, 12 bytes of 6-bit scales and mins, 128 bytes of
/// nibbles.
pub const Q4_K_BYTES: usize = 144;
/// Bytes per Q5_K block: as Q4_K plus 32 bytes of fifth bits before the nibbles.
pub const Q5_K_BYTES: usize = 176;
/// Bytes per Q6_K block: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 signed
/// 8-bit scales, f16 `d`.
pub const Q6_K_BYTES: usize = 210;

/// Dequantizes Q2_K data (whole blocks) into `out`, 256 floats per block.
#[inline]
pub fn dequantize_q2_k(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<Q2_K_BYTES>();
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let (scales, qs) = (&b[0..16], &b[16..80]);
        let (d, min) = (half_at(b, 80), half_at(b, 82));
        let mut is = 0;
        let mut at = 0;
        for n in 0..2 {
            let q = &qs[32 * n..32 * n + 32];
            for shift in [0, 2, 4, 6] {
                for half in 0..2 {
                    let sc = scales[is];
                    is += 1;
                    let (dl, ml) = (d * (sc & 0x0F) as f32, min * (sc >> 4) as f32);
                    for l in 0..16 {
                        y[at] = dl * ((q[16 * half + l] >> shift) & 3) as f32 - ml;
                        at += 1;
                    }
                }
            }
        }
    }
}

/// Six-bit scale `i` (0..16) of a Q3_K block from its 12 packed bytes: its low four bits
/// are in byte `i` (low nibble, `i < 8`) or byte `i − 8` (high nibble), its top two bits
/// in byte `8 + i % 4`, at bit `2·(i / 4)`.
#[inline]
pub fn q3_k_scale(packed: &[u8], i: usize) -> i8 {
    let low = if i < 8 {
        packed[i] & 0x0F
    } else {
        packed[i - 8] >> 4
    };
    let high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    (low | (high << 4)) as i8
}

/// The 16 six-bit scales of a Q3_K block from its 12 packed bytes ([`q3_k_scale`]).
fn q3_k_scales(packed: &[u8]) -> [i8; 16] {
    std::array::from_fn(|i| q3_k_scale(packed, i))
}

/// Dequantizes Q3_K data (whole blocks) into `out`, 256 floats per block.
#[inline]
pub fn dequantize_q3_k(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<Q3_K_BYTES>();
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let (hmask, qs) = (&b[0..32], &b[32..96]);
        let scales = q3_k_scales(&b[96..108]);
        let d_all = half_at(b, 108);
        let (mut is, mut at, mut m) = (0, 0, 1u8);
        for n in 0..2 {
            let q = &qs[32 * n..32 * n + 32];
            for shift in [0, 2, 4, 6] {
                for half in 0..2 {
                    let dl = d_all * (scales[is] as i32 - 32) as f32;
                    is += 1;
                    for l in 0..16 {
                        let k = 16 * half + l;
                        let low = ((q[k] >> shift) & 3) as i32;
                        let high = if hmask[k] & m != 0 { 0 } else { 4 };
                        y[at] = dl * (low - high) as f32;
                        at += 1;
                    }
                }
                m <<= 1;
            }
        }
    }
}

/// Scale and minimum `j` (0..8) of a Q4_K/Q5_K block's 12 packed bytes (ggml's
/// `get_scale_min_k4`): six bits each.
pub fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Dequantizes Q4_K data (whole blocks) into `out`, 256 floats per block.
#[inline]
pub fn dequantize_q4_k(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<Q4_K_BYTES>();
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let (d, min) = (half_at(b, 0), half_at(b, 2));
        let (scales, qs) = (&b[4..16], &b[16..144]);
        for (k, chunk) in y.chunks_exact_mut(64).enumerate() {
            let q = &qs[32 * k..32 * k + 32];
            let (s1, m1) = scale_min_k4(2 * k, scales);
            let (s2, m2) = scale_min_k4(2 * k + 1, scales);
            let (d1, m1) = (d * s1 as f32, min * m1 as f32);
            let (d2, m2) = (d * s2 as f32, min * m2 as f32);
            for l in 0..32 {
                chunk[l] = d1 * (q[l] & 0x0F) as f32 - m1;
                chunk[l + 32] = d2 * (q[l] >> 4) as f32 - m2;
            }
        }
    }
}

/// Dequantizes Q5_K data (whole blocks) into `out`, 256 floats per block.
#[inline]
pub fn dequantize_q5_k(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<Q5_K_BYTES>();
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let (d, min) = (half_at(b, 0), half_at(b, 2));
        let (scales, qh, qs) = (&b[4..16], &b[16..48], &b[48..176]);
        for (k, chunk) in y.chunks_exact_mut(64).enumerate() {
            let ql = &qs[32 * k..32 * k + 32];
            let (u1, u2) = (1u8 << (2 * k), 2u8 << (2 * k));
            let (s1, m1) = scale_min_k4(2 * k, scales);
            let (s2, m2) = scale_min_k4(2 * k + 1, scales);
            let (d1, m1) = (d * s1 as f32, min * m1 as f32);
            let (d2, m2) = (d * s2 as f32, min * m2 as f32);
            for l in 0..32 {
                let h1 = if qh[l] & u1 != 0 { 16 } else { 0 };
                let h2 = if qh[l] & u2 != 0 { 16 } else { 0 };
                chunk[l] = d1 * ((ql[l] & 0x0F) + h1) as f32 - m1;
                chunk[l + 32] = d2 * ((ql[l] >> 4) + h2) as f32 - m2;
            }
        }
    }
}

/// Dequantizes Q6_K data (whole blocks) into `out`, 256 floats per block.
#[inline]
pub fn dequantize_q6_k(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<Q6_K_BYTES>();
    for (b, y) in blocks.iter().zip(out.chunks_exact_mut(QK_K)) {
        let d = half_at(b, 208);
        for (n, chunk) in y.chunks_exact_mut(128).enumerate() {
            let ql = &b[64 * n..64 * n + 64];
            let qh = &b[128 + 32 * n..128 + 32 * n + 32];
            let sc = &b[192 + 8 * n..192 + 8 * n + 8];
            for l in 0..32 {
                let is = l / 16;
                let q1 = ((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) as i32 - 32;
                let q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) as i32 - 32;
                let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i32 - 32;
                let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i32 - 32;
                let s = |i: usize| d * (sc[i] as i8) as f32;
                chunk[l] = s(is) * q1 as f32;
                chunk[l + 32] = s(is + 2) * q2 as f32;
                chunk[l + 64] = s(is + 4) * q3 as f32;
                chunk[l + 96] = s(is + 6) * q4 as f32;
            }
        }
    }
}
