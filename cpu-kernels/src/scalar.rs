//! The scalar references: plain loops, one block at a time, in the block's own order.
//! Every SIMD kernel is tested against these (`kernels/tests.rs`).

use super::Vectors;
use super::q8::Q8Block;
use quant::{BlockQ4_1, BlockQ8_0, f16_to_f32};

/// `Σ_c W[c]·x[c]` for one Q4_1 row: per block `d·Σ q_j x_j + m·Σ x_j`, with the block
/// sums `Σ x_j` given in `xsum` (computed once per activation vector).
pub fn q4_1_f32(row: &[u8], x: &[f32], xsum: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let mut total = 0f32;
    for ((raw, xb), &s) in blocks.iter().zip(x.chunks_exact(32)).zip(xsum) {
        let d = f16_to_f32(u16::from_le_bytes([raw[0], raw[1]]));
        let m = f16_to_f32(u16::from_le_bytes([raw[2], raw[3]]));
        let mut acc = 0f32;
        for j in 0..16 {
            acc += (raw[4 + j] & 0x0F) as f32 * xb[j] + (raw[4 + j] >> 4) as f32 * xb[j + 16];
        }
        total += d * acc + m * s;
    }
    total
}

/// `Σ_c W[c]·x[c]` for one Q8_0 row: per block `d·Σ q_j x_j`.
pub fn q8_0_f32(row: &[u8], x: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let mut total = 0f32;
    for (raw, xb) in blocks.iter().zip(x.chunks_exact(32)) {
        let d = f16_to_f32(u16::from_le_bytes([raw[0], raw[1]]));
        let acc: f32 = raw[2..]
            .iter()
            .zip(xb)
            .map(|(&q, &v)| q as i8 as f32 * v)
            .sum();
        total += d * acc;
    }
    total
}

/// `Σ_c W[c]·x[c]` for one Q4_K row: per sub-block of 32 weights `d·sc·Σ q_j x_j −
/// dmin·m·Σ x_j` (ggml's Q4_K: 6-bit scale `sc` and minimum `m` per sub-block, 4-bit codes),
/// with the block sums of 32 `Σ x_j` given in `xsum`, as Q4_1's.
pub fn q4_k_f32(row: &[u8], x: &[f32], xsum: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ quant::Q4_K_BYTES }>();
    let mut total = 0f32;
    for (i, b) in blocks.iter().enumerate() {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        let dmin = f16_to_f32(u16::from_le_bytes([b[2], b[3]]));
        let (scales, qs) = (&b[4..16], &b[16..144]);
        for k in 0..4 {
            let q = &qs[32 * k..32 * k + 32];
            let xb = &x[i * 256 + 64 * k..][..64];
            let (s1, m1) = quant::scale_min_k4(2 * k, scales);
            let (s2, m2) = quant::scale_min_k4(2 * k + 1, scales);
            let (mut a1, mut a2) = (0f32, 0f32);
            for l in 0..32 {
                a1 += (q[l] & 0x0F) as f32 * xb[l];
                a2 += (q[l] >> 4) as f32 * xb[l + 32];
            }
            let (xs1, xs2) = (xsum[i * 8 + 2 * k], xsum[i * 8 + 2 * k + 1]);
            total += d * s1 as f32 * a1 - dmin * m1 as f32 * xs1;
            total += d * s2 as f32 * a2 - dmin * m2 as f32 * xs2;
        }
    }
    total
}

/// [`q4_k_f32`] for several vectors.
pub fn q4_k_f32_xn(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    for (v, o) in out[..x.len()].iter_mut().enumerate() {
        *o = q4_k_f32(row, x.xs[v], x.sums[v]);
    }
}

/// `Σ_c W[c]·x[c]` for one Q5_0 row: per block `d·Σ (q_j − 16)·x_j`, the 5-bit codes' low
/// four bits in the nibbles and the fifth in `qh` (ggml's Q5_0).
pub fn q5_0_f32(row: &[u8], x: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ quant::Q5_0_BYTES }>();
    let mut total = 0f32;
    for (b, xb) in blocks.iter().zip(x.chunks_exact(32)) {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
        let mut acc = 0f32;
        for j in 0..16 {
            let lo = ((b[6 + j] & 0x0F) as u32 | (((qh >> j) & 1) << 4)) as i32 - 16;
            let hi = ((b[6 + j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4)) as i32 - 16;
            acc += lo as f32 * xb[j] + hi as f32 * xb[j + 16];
        }
        total += d * acc;
    }
    total
}

/// [`q5_0_f32`] for several vectors.
pub fn q5_0_f32_xn(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    for (v, o) in out[..x.len()].iter_mut().enumerate() {
        *o = q5_0_f32(row, x.xs[v]);
    }
}

/// [`q4_1_f32`] for several vectors.
pub fn q4_1_f32_xn(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    for (v, o) in out[..x.len()].iter_mut().enumerate() {
        *o = q4_1_f32(row, x.xs[v], x.sums[v]);
    }
}

/// [`q8_0_f32`] for several vectors.
pub fn q8_0_f32_xn(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    for (v, o) in out[..x.len()].iter_mut().enumerate() {
        *o = q8_0_f32(row, x.xs[v]);
    }
}

/// [`q4_1_f32`] for four rows.
pub fn q4_1_f32_r4(rows: [&[u8]; 4], x: &[f32], xsum: &[f32]) -> [f32; 4] {
    rows.map(|r| q4_1_f32(r, x, xsum))
}

/// [`q8_0_f32`] for four rows.
pub fn q8_0_f32_r4(rows: [&[u8]; 4], x: &[f32]) -> [f32; 4] {
    rows.map(|r| q8_0_f32(r, x))
}

/// One Q4_1 row against 8-bit activations: per block `d_w·d_x·Σ q_w q_x + m_w·s_x`
/// (integer inner sum, as llama.cpp's `vec_dot_q4_1_q8_1`).
pub fn q4_1_q8(row: &[u8], xq: &[Q8Block]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let mut total = 0f32;
    for (raw, y) in blocks.iter().zip(xq) {
        let d = f16_to_f32(u16::from_le_bytes([raw[0], raw[1]]));
        let m = f16_to_f32(u16::from_le_bytes([raw[2], raw[3]]));
        let mut isum = 0i32;
        for j in 0..16 {
            isum += (raw[4 + j] & 0x0F) as i32 * y.qs[j] as i32
                + (raw[4 + j] >> 4) as i32 * y.qs[j + 16] as i32;
        }
        total += d * y.d * isum as f32 + m * y.s;
    }
    total
}

/// One Q8_0 row against 8-bit activations: per block `d_w·d_x·Σ q_w q_x`.
pub fn q8_0_q8(row: &[u8], xq: &[Q8Block]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let mut total = 0f32;
    for (raw, y) in blocks.iter().zip(xq) {
        let d = f16_to_f32(u16::from_le_bytes([raw[0], raw[1]]));
        let isum: i32 = raw[2..]
            .iter()
            .zip(&y.qs)
            .map(|(&q, &v)| q as i8 as i32 * v as i32)
            .sum();
        total += d * y.d * isum as f32;
    }
    total
}

/// [`q4_1_q8`] for several 8-bit vectors.
pub fn q4_1_q8_xn(row: &[u8], xq: &[&[Q8Block]], out: &mut [f32]) {
    for (o, y) in out[..xq.len()].iter_mut().zip(xq) {
        *o = q4_1_q8(row, y);
    }
}

/// [`q8_0_q8`] for several 8-bit vectors.
pub fn q8_0_q8_xn(row: &[u8], xq: &[&[Q8Block]], out: &mut [f32]) {
    for (o, y) in out[..xq.len()].iter_mut().zip(xq) {
        *o = q8_0_q8(row, y);
    }
}

/// [`q4_1_q8`] for four rows.
pub fn q4_1_q8_r4(rows: [&[u8]; 4], xq: &[Q8Block]) -> [f32; 4] {
    rows.map(|r| q4_1_q8(r, xq))
}

/// [`q8_0_q8`] for four rows.
pub fn q8_0_q8_r4(rows: [&[u8]; 4], xq: &[Q8Block]) -> [f32; 4] {
    rows.map(|r| q8_0_q8(r, xq))
}

/// Dot product of two equal-length float slices.
pub fn f32_dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// [`f32_dot`] of `q` with each of `out.len()` rows of `rows` that start `stride` floats
/// apart (row `j` is `rows[j·stride..][..q.len()]`): attention's scores over a page of
/// keys.
pub fn f32_dots(q: &[f32], rows: &[f32], stride: usize, out: &mut [f32]) {
    for (j, o) in out.iter_mut().enumerate() {
        *o = f32_dot(q, &rows[j * stride..][..q.len()]);
    }
}

/// `acc += p[j]·row_j` for each row `j` in turn (rows as in [`f32_dots`], `acc.len()`
/// floats each), every product rounded before it is added: attention's weighted sum of a
/// page of values.
pub fn f32_axpys(p: &[f32], rows: &[f32], stride: usize, acc: &mut [f32]) {
    let len = acc.len();
    for (j, &pj) in p.iter().enumerate() {
        for (a, &v) in acc.iter_mut().zip(&rows[j * stride..][..len]) {
            *a += pj * v;
        }
    }
}
