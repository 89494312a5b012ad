//! Matrix products straight on the quantized blocks.
//!
//! A weight matrix of `rows × cols` is stored row by row (ggml's `ne[0] = cols`); for a
//! batch of `n` activation vectors `x` (`n × cols`) the product is `out` (`n × rows`),
//! `out[t][r] = Σ_c W[r][c]·x[t][c]`. Each activation vector is prepared once (its block
//! sums, or its 8-bit blocks). One vector goes through the four-row kernels (`kernels/`);
//! several f32 vectors go through the many-vector kernels, up to eight per call, so each
//! block of a row is decoded once for the batch. Rows are split into chunks that run on
//! the thread pool (`parallel.rs`).

use super::kernels::{
    Activations, Kernels, MAX_VECTORS, Q8Block, Vectors, block_sums, quantize_q8,
};
use super::parallel;
use crate::gguf::{BlockQ4_1, BlockQ8_0, GgmlType};

/// Below this many multiply-adds a product runs on the calling thread alone.
const PARALLEL_MIN_WORK: usize = 1 << 15;

/// A weight matrix as the forward pass reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WeightData<'a> {
    /// Q4_1 blocks, `rows · cols / 32` of them.
    Q4_1(&'a [u8]),
    /// Q8_0 blocks.
    Q8_0(&'a [u8]),
    /// Plain floats (F32 tensors).
    F32(&'a [f32]),
    /// Blocks of a type without row kernels (F16, BF16, Q5_*, K-quants), kept as in the
    /// file: each row is decoded to f32 by `quant`'s dequantizer when the product reaches
    /// it, then multiplied as an f32 row (the same floats, so the same result, as
    /// decoding the whole matrix at load, at a quarter or less of the memory).
    Decoded(GgmlType, &'a [u8]),
}

/// One activation vector, prepared for the row kernels.
enum Prepared<'a> {
    /// f32 values and their block sums (Q4_1's minimum multiplies them).
    F32(&'a [f32], Vec<f32>),
    /// 8-bit blocks.
    Q8(Vec<Q8Block>),
    /// f32 values for an f32 matrix.
    Plain(&'a [f32]),
}

/// `out (n × rows) = x (n × cols) · Wᵀ` on kernel set `k`, with the activations in precision
/// `act` (f32 matrices always multiply f32 activations). The forward pass calls it through
/// [`super::split::matmul`], which may share the rows with helpers; tests compare sets.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul_with(
    k: &Kernels,
    w: WeightData<'_>,
    rows: usize,
    cols: usize,
    x: &[f32],
    n: usize,
    out: &mut [f32],
    act: Activations,
) {
    debug_assert_eq!(x.len(), n * cols);
    debug_assert_eq!(out.len(), n * rows);
    if let WeightData::Decoded(ty, data) = w {
        return decoded_matmul(k, ty, data, rows, cols, x, n, out);
    }
    let prepared: Vec<Prepared<'_>> = x
        .chunks_exact(cols)
        .map(|xt| match (w, act) {
            (WeightData::F32(_) | WeightData::Decoded(..), _) => Prepared::Plain(xt),
            (_, Activations::F32) => {
                let mut s = Vec::new();
                block_sums(xt, &mut s);
                Prepared::F32(xt, s)
            }
            (_, Activations::Q8) => {
                let mut q = Vec::new();
                quantize_q8(xt, &mut q);
                Prepared::Q8(q)
            }
        })
        .collect();
    let work = rows * cols * n;
    let chunk_rows = if work < PARALLEL_MIN_WORK {
        rows
    } else {
        // Several chunks per thread, so a slow thread does not hold the others up.
        rows.div_ceil(4 * parallel::threads()).max(8)
    };
    if n == 1 {
        parallel::for_each_chunk(out, chunk_rows, |i, part| {
            rows_dot(
                k,
                w,
                cols,
                i * chunk_rows,
                &prepared[0],
                part.len(),
                |j, v| part[j] = v,
            );
        });
        return;
    }
    // Row-major (rows × n) so chunks of rows are contiguous, then transposed into `out`.
    // Vectors go up to eight at a time through the many-vector kernels (f32 or 8-bit):
    // each block is decoded once for the group, and each row meets every group while it
    // is in the L1 cache. Every result is what the one-row, one-vector kernel gives, so a
    // sequence's logits do not depend on the batch it ran in.
    let groups = Groups::new(w, &prepared);
    let mut part = vec![0f32; rows * n];
    parallel::for_each_chunk(&mut part, chunk_rows * n, |i, part| {
        let r0 = i * chunk_rows;
        for (j, o) in part.chunks_exact_mut(n).enumerate() {
            let r = r0 + j;
            let mut t = 0;
            match (&groups, w) {
                (Groups::F32(gs), WeightData::Q4_1(d)) => {
                    for g in gs {
                        let out = &mut o[t..t + g.xs.len()];
                        (k.q4_1_f32_xn)(row(d, r, cols, BlockQ4_1::BYTES), g.vectors(), out);
                        t += g.xs.len();
                    }
                }
                (Groups::F32(gs), WeightData::Q8_0(d)) => {
                    for g in gs {
                        let out = &mut o[t..t + g.xs.len()];
                        (k.q8_0_f32_xn)(row(d, r, cols, BlockQ8_0::BYTES), g.vectors(), out);
                        t += g.xs.len();
                    }
                }
                (Groups::Q8(gs), WeightData::Q4_1(d)) => {
                    for g in gs {
                        let out = &mut o[t..t + g.len()];
                        (k.q4_1_q8_xn)(row(d, r, cols, BlockQ4_1::BYTES), g, out);
                        t += g.len();
                    }
                }
                (Groups::Q8(gs), WeightData::Q8_0(d)) => {
                    for g in gs {
                        let out = &mut o[t..t + g.len()];
                        (k.q8_0_q8_xn)(row(d, r, cols, BlockQ8_0::BYTES), g, out);
                        t += g.len();
                    }
                }
                _ => {
                    for (t, p) in prepared.iter().enumerate() {
                        o[t] = row_dot(k, w, cols, r, p);
                    }
                }
            }
        }
    });
    for (r, vals) in part.chunks_exact(n).enumerate() {
        for (t, &v) in vals.iter().enumerate() {
            out[t * rows + r] = v;
        }
    }
}

/// [`matmul_with`] for a [`WeightData::Decoded`] matrix: each row is decoded once into a
/// per-chunk scratch row and multiplied with every vector by the f32 kernel, or goes
/// through the type's fused kernel where the set has one.
#[allow(clippy::too_many_arguments)]
fn decoded_matmul(
    k: &Kernels,
    ty: GgmlType,
    data: &[u8],
    rows: usize,
    cols: usize,
    x: &[f32],
    n: usize,
    out: &mut [f32],
) {
    let row_bytes = cols / ty.block_len() * ty.block_bytes();
    let chunk_rows = if rows * cols * n < PARALLEL_MIN_WORK {
        rows
    } else {
        rows.div_ceil(4 * parallel::threads()).max(8)
    };
    // Most types have fused kernels in the SIMD sets (up to eight vectors per call): each
    // vector's block sums, once (Q4_K's minimums multiply them). F16 and BF16 kernels take
    // whole groups of 32.
    let fused = (k.fused)(ty).filter(|_| cols.is_multiple_of(32));
    let sums: Vec<Vec<f32>> = match fused {
        Some(_) => x
            .chunks_exact(cols)
            .map(|xt| {
                let mut s = Vec::new();
                block_sums(xt, &mut s);
                s
            })
            .collect(),
        None => Vec::new(),
    };
    let xs: Vec<&[f32]> = x.chunks_exact(cols).collect();
    let ss: Vec<&[f32]> = sums.iter().map(Vec::as_slice).collect();
    let mut part = vec![0f32; rows * n];
    parallel::for_each_chunk(&mut part, chunk_rows * n, |i, part| {
        let mut scratch = vec![0f32; if fused.is_some() { 0 } else { cols }];
        for (j, o) in part.chunks_exact_mut(n).enumerate() {
            let r = i * chunk_rows + j;
            let bytes = &data[r * row_bytes..(r + 1) * row_bytes];
            if let Some(xn) = fused {
                // Up to eight vectors per call, each block's codes widened once for them.
                for ((o, xs), ss) in o
                    .chunks_mut(MAX_VECTORS)
                    .zip(xs.chunks(MAX_VECTORS))
                    .zip(ss.chunks(MAX_VECTORS))
                {
                    let v = Vectors {
                        xs,
                        sums: ss,
                        by_block: &[],
                    };
                    xn(bytes, v, o);
                }
                continue;
            }
            (k.decode_row)(ty, bytes, &mut scratch);
            for (v, xt) in o.iter_mut().zip(x.chunks_exact(cols)) {
                *v = (k.f32_dot)(&scratch, xt);
            }
        }
    });
    for (r, vals) in part.chunks_exact(n).enumerate() {
        for (t, &v) in vals.iter().enumerate() {
            out[t * rows + r] = v;
        }
    }
}

/// A batch's vectors in groups for the many-vector kernels, or `None` (an f32 matrix,
/// whose rows go one vector at a time).
enum Groups<'a> {
    /// f32 vectors against a block-quantized matrix.
    F32(Vec<Group<'a>>),
    /// 8-bit vectors against a block-quantized matrix.
    Q8(Vec<Vec<&'a [Q8Block]>>),
    None,
}

impl<'a> Groups<'a> {
    fn new(w: WeightData<'_>, prepared: &'a [Prepared<'a>]) -> Self {
        if !matches!(w, WeightData::Q4_1(_) | WeightData::Q8_0(_)) {
            return Groups::None;
        }
        if all_f32(prepared) {
            return Groups::F32(prepared.chunks(MAX_VECTORS).map(Group::new).collect());
        }
        let q8: Vec<&[Q8Block]> = prepared
            .iter()
            .filter_map(|p| match p {
                Prepared::Q8(q) => Some(q.as_slice()),
                _ => None,
            })
            .collect();
        if q8.len() == prepared.len() {
            Groups::Q8(q8.chunks(MAX_VECTORS).map(<[_]>::to_vec).collect())
        } else {
            Groups::None
        }
    }
}

/// Up to [`MAX_VECTORS`] f32 vectors laid out for the many-vector kernels.
struct Group<'a> {
    xs: Vec<&'a [f32]>,
    sums: Vec<&'a [f32]>,
    by_block: Vec<[f32; MAX_VECTORS]>,
}

impl<'a> Group<'a> {
    /// The group of `prepared` (all [`Prepared::F32`]).
    fn new(prepared: &'a [Prepared<'a>]) -> Self {
        let (xs, sums): (Vec<&[f32]>, Vec<&[f32]>) = prepared
            .iter()
            .map(|p| match p {
                Prepared::F32(x, s) => (*x, s.as_slice()),
                _ => unreachable!("groups are formed of f32 vectors"),
            })
            .unzip();
        let by_block = Vectors::transpose_sums(&sums);
        Group { xs, sums, by_block }
    }

    /// The kernels' view of the group.
    fn vectors(&self) -> Vectors<'_> {
        Vectors {
            xs: &self.xs,
            sums: &self.sums,
            by_block: &self.by_block,
        }
    }
}

/// Whether every vector is prepared as f32 values (what the f32 many-vector kernels take).
fn all_f32(p: &[Prepared<'_>]) -> bool {
    p.iter().all(|p| matches!(p, Prepared::F32(..)))
}

/// Rows `r0 .. r0 + count` against one prepared vector, each result handed to
/// `put(j, value)` for row `r0 + j`: four rows per kernel call while four remain (the
/// four-row kernels load the vector once for four rows), then one at a time.
fn rows_dot(
    k: &Kernels,
    w: WeightData<'_>,
    cols: usize,
    r0: usize,
    p: &Prepared<'_>,
    count: usize,
    mut put: impl FnMut(usize, f32),
) {
    let mut j = 0;
    while j + 4 <= count {
        let r = r0 + j;
        let four = match (w, p) {
            (WeightData::Q4_1(d), Prepared::F32(xt, s)) => {
                (k.q4_1_f32_r4)(rows4(d, r, cols, BlockQ4_1::BYTES), xt, s)
            }
            (WeightData::Q4_1(d), Prepared::Q8(q)) => {
                (k.q4_1_q8_r4)(rows4(d, r, cols, BlockQ4_1::BYTES), q)
            }
            (WeightData::Q8_0(d), Prepared::F32(xt, _)) => {
                (k.q8_0_f32_r4)(rows4(d, r, cols, BlockQ8_0::BYTES), xt)
            }
            (WeightData::Q8_0(d), Prepared::Q8(q)) => {
                (k.q8_0_q8_r4)(rows4(d, r, cols, BlockQ8_0::BYTES), q)
            }
            _ => std::array::from_fn(|i| row_dot(k, w, cols, r + i, p)),
        };
        for (i, v) in four.into_iter().enumerate() {
            put(j + i, v);
        }
        j += 4;
    }
    for j in j..count {
        put(j, row_dot(k, w, cols, r0 + j, p));
    }
}

/// Row `r` against one prepared vector.
fn row_dot(k: &Kernels, w: WeightData<'_>, cols: usize, r: usize, p: &Prepared<'_>) -> f32 {
    match (w, p) {
        (WeightData::Q4_1(d), Prepared::F32(xt, s)) => {
            (k.q4_1_f32)(row(d, r, cols, BlockQ4_1::BYTES), xt, s)
        }
        (WeightData::Q4_1(d), Prepared::Q8(q)) => (k.q4_1_q8)(row(d, r, cols, BlockQ4_1::BYTES), q),
        (WeightData::Q8_0(d), Prepared::F32(xt, _)) => {
            (k.q8_0_f32)(row(d, r, cols, BlockQ8_0::BYTES), xt)
        }
        (WeightData::Q8_0(d), Prepared::Q8(q)) => (k.q8_0_q8)(row(d, r, cols, BlockQ8_0::BYTES), q),
        (WeightData::F32(d), Prepared::Plain(xt)) => (k.f32_dot)(&d[r * cols..][..cols], xt),
        _ => unreachable!("activations are prepared for the matrix's type"),
    }
}

/// Rows `r .. r + 4` of a block-quantized matrix.
#[inline]
fn rows4(data: &[u8], r: usize, cols: usize, block: usize) -> [&[u8]; 4] {
    std::array::from_fn(|i| row(data, r + i, cols, block))
}

/// Row `r` of a block-quantized matrix of `cols` columns, `block` bytes per 32 weights.
#[inline]
fn row(data: &[u8], r: usize, cols: usize, block: usize) -> &[u8] {
    debug_assert!(block == BlockQ4_1::BYTES || block == BlockQ8_0::BYTES);
    let bytes = cols / 32 * block;
    &data[r * bytes..(r + 1) * bytes]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forward::kernels::SCALAR;
    use crate::gguf::{GgmlType, dequantize_q4_1, dequantize_q8_0};

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    fn random_blocks(n_blocks: usize, block: usize, seed: &mut u64) -> Vec<u8> {
        let mut v: Vec<u8> = (0..n_blocks * block).map(|_| lcg(seed) as u8).collect();
        for b in 0..n_blocks {
            // Small finite scales: f16 exponent 10..14 (≈ 2^-5..2^-1), random sign.
            let h =
                ((lcg(seed) as u16 & 0x83FF) | (((10 + lcg(seed) % 5) as u16) << 10)).to_le_bytes();
            v[b * block..b * block + 2].copy_from_slice(&h);
            if block == 20 {
                let h = ((lcg(seed) as u16 & 0x83FF) | (((10 + lcg(seed) % 5) as u16) << 10))
                    .to_le_bytes();
                v[b * block + 2..b * block + 4].copy_from_slice(&h);
            }
        }
        v
    }

    /// Every row and vector of a product against the dequantized matrix in f64, for each
    /// kernel set and precision; 8-bit activations are held to the bound their rounding
    /// allows (half a step of each block's scale times the row's magnitudes).
    fn check(ty: GgmlType, rows: usize, cols: usize, n: usize) {
        let mut seed = (rows * 31 + cols * 7 + n) as u64;
        let block = ty.block_bytes();
        let data = random_blocks(rows * cols / 32, block, &mut seed);
        let mut dense = vec![0f32; rows * cols];
        match ty {
            GgmlType::Q4_1 => dequantize_q4_1(&data, &mut dense),
            _ => dequantize_q8_0(&data, &mut dense),
        }
        let x: Vec<f32> = (0..n * cols)
            .map(|_| (lcg(&mut seed) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        let w = match ty {
            GgmlType::Q4_1 => WeightData::Q4_1(&data),
            _ => WeightData::Q8_0(&data),
        };
        for k in [&SCALAR, Kernels::best()] {
            for act in [Activations::F32, Activations::Q8] {
                let mut out = vec![0f32; n * rows];
                matmul_with(k, w, rows, cols, &x, n, &mut out, act);
                for t in 0..n {
                    let xt = &x[t * cols..(t + 1) * cols];
                    let amax: Vec<f32> = xt
                        .chunks(32)
                        .map(|b| b.iter().fold(0f32, |a, v| a.max(v.abs())))
                        .collect();
                    for r in 0..rows {
                        let wr = &dense[r * cols..(r + 1) * cols];
                        let (want, scale) = wr
                            .iter()
                            .zip(xt)
                            .map(|(&a, &b)| a as f64 * b as f64)
                            .fold((0.0, 0.0), |(s, a), v| (s + v, a + v.abs()));
                        let rounding: f64 = wr
                            .iter()
                            .enumerate()
                            .map(|(c, &a)| a.abs() as f64 * amax[c / 32] as f64 / 254.0)
                            .sum();
                        let bound = match act {
                            Activations::F32 => 1e-5 * scale + 1e-6,
                            Activations::Q8 => rounding * 1.001 + 1e-5 * scale + 1e-6,
                        };
                        let got = out[t * rows + r] as f64;
                        assert!(
                            (got - want).abs() <= bound,
                            "{} {act:?} {ty:?} r{r} t{t}: {got} vs {want}",
                            k.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn quantized_products_match_dequantized_dense() {
        for ty in [GgmlType::Q4_1, GgmlType::Q8_0] {
            check(ty, 3, 64, 1);
            check(ty, 17, 96, 3);
            check(ty, 9, 64, 5); // five vectors in one many-vector call
            check(ty, 13, 96, 11); // eight, then three
            // Large enough to be split across threads.
            check(ty, 600, 512, 1);
            check(ty, 600, 512, 2);
            check(ty, 600, 512, 9);
        }
    }

    /// A decoded matrix (rows decoded as the product reaches them) gives exactly what the
    /// same matrix decoded whole at load gives, for one vector and for a batch, on a
    /// product large enough to be split across threads; through the fused kernels, the
    /// same up to the order of f32 additions.
    #[test]
    fn decoded_rows_equal_the_matrix_decoded_whole() {
        let mut seed = 7u64;
        for (ty, rows, cols) in [(GgmlType::F16, 300, 96), (GgmlType::Q6K, 600, 512)] {
            let n_blocks = rows * cols / ty.block_len();
            let mut data: Vec<u8> = (0..n_blocks * ty.block_bytes())
                .map(|_| lcg(&mut seed) as u8)
                .collect();
            // Finite f16 values (F16) or block scales (Q6_K's last two bytes): exponents
            // below 15.
            let f16_at = if ty == GgmlType::F16 {
                0
            } else {
                ty.block_bytes() - 2
            };
            for b in data.chunks_exact_mut(if ty == GgmlType::F16 {
                2
            } else {
                ty.block_bytes()
            }) {
                b[f16_at + 1] &= 0xbb;
            }
            let mut dense = vec![0f32; rows * cols];
            ty.dequantize(&data, &mut dense);
            assert!(dense.iter().all(|v| v.is_finite()));
            for n in [1, 3] {
                let x: Vec<f32> = (0..n * cols)
                    .map(|_| (lcg(&mut seed) % 2001) as f32 / 1000.0 - 1.0)
                    .collect();
                let (mut a, mut b) = (vec![0f32; n * rows], vec![0f32; n * rows]);
                let act = Activations::F32;
                let unfused = Kernels {
                    fused: |_| None,
                    ..*Kernels::best()
                };
                let w = WeightData::Decoded(ty, &data);
                matmul_with(&unfused, w, rows, cols, &x, n, &mut a, act);
                matmul_with(
                    Kernels::best(),
                    WeightData::F32(&dense),
                    rows,
                    cols,
                    &x,
                    n,
                    &mut b,
                    act,
                );
                assert_eq!(a, b, "{ty:?}, {n} vectors");
                let mut f = vec![0f32; n * rows];
                matmul_with(Kernels::best(), w, rows, cols, &x, n, &mut f, act);
                for (t, (f, b)) in f.chunks(rows).zip(b.chunks(rows)).enumerate() {
                    let xt = &x[t * cols..(t + 1) * cols];
                    for (r, (&f, &b)) in f.iter().zip(b).enumerate() {
                        let size: f32 = dense[r * cols..(r + 1) * cols]
                            .iter()
                            .zip(xt)
                            .map(|(w, x)| (w * x).abs())
                            .sum();
                        assert!(
                            (f - b).abs() <= 1e-5 * size,
                            "{ty:?} fused row {r}: {f} vs {b}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn f32_product() {
        let w: Vec<f32> = (0..6).map(|i| i as f32).collect(); // 2 × 3
        let mut out = vec![0f32; 2];
        matmul_with(
            Kernels::best(),
            WeightData::F32(&w),
            2,
            3,
            &[1.0, 1.0, 2.0],
            1,
            &mut out,
            Activations::Q8,
        );
        assert_eq!(out, vec![0.0 + 1.0 + 4.0, 3.0 + 4.0 + 10.0]);
    }
}
