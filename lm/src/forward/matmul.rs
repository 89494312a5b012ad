//! Matrix products straight on the quantized blocks, f32 activations, f32 accumulation.
//!
//! A weight matrix of `rows × cols` is stored row by row (ggml's `ne[0] = cols`); for a
//! batch of `n` activation vectors `x` (`n × cols`) the product is `out` (`n × rows`),
//! `out[t][r] = Σ_c W[r][c]·x[t][c]`. Each block is decoded once per row and used for every
//! vector of the batch; no f32 copy of a matrix is made. Rows are split across threads
//! where that pays.

use crate::gguf::{BlockQ4_1, BlockQ8_0, QK4_1, QK8_0};

/// Below this many multiply-adds a product runs on the calling thread alone.
const PARALLEL_MIN_WORK: usize = 1 << 18;

/// A weight matrix as the forward pass reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WeightData<'a> {
    /// Q4_1 blocks, `rows · cols / 32` of them.
    Q4_1(&'a [u8]),
    /// Q8_0 blocks.
    Q8_0(&'a [u8]),
    /// Plain floats (F32 tensors, and F16 tensors converted at load).
    F32(&'a [f32]),
}

/// How many threads the products use: the machine's parallelism, at most 8; 1 where
/// threads cannot be spawned (wasm32).
pub(crate) fn thread_count() -> usize {
    if cfg!(target_arch = "wasm32") {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// `out (n × rows) = x (n × cols) · Wᵀ`.
pub(crate) fn matmul(
    w: WeightData<'_>,
    rows: usize,
    cols: usize,
    x: &[f32],
    n: usize,
    out: &mut [f32],
) {
    debug_assert_eq!(x.len(), n * cols);
    debug_assert_eq!(out.len(), n * rows);
    let threads = if rows * cols * n >= PARALLEL_MIN_WORK {
        thread_count().min(rows)
    } else {
        1
    };
    if threads <= 1 {
        let mut part = vec![0f32; rows * n];
        rows_product(w, 0..rows, cols, x, n, &mut part);
        scatter(&part, 0, rows, n, out);
        return;
    }
    let chunk = rows.div_ceil(threads);
    let parts: Vec<(usize, Vec<f32>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads)
            .map(|i| {
                let r0 = (i * chunk).min(rows);
                let r1 = ((i + 1) * chunk).min(rows);
                s.spawn(move || {
                    let mut part = vec![0f32; (r1 - r0) * n];
                    rows_product(w, r0..r1, cols, x, n, &mut part);
                    (r0, part)
                })
            })
            .collect();
        let mut part = vec![0f32; chunk.min(rows) * n];
        rows_product(w, 0..chunk.min(rows), cols, x, n, &mut part);
        let mut parts = vec![(0, part)];
        // A panic in a worker is a bug in this module; re-raise it as such.
        parts.extend(
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
        );
        parts
    });
    for (r0, part) in parts {
        scatter(&part, r0, rows, n, out);
    }
}

/// Copies a row-major `(r1 - r0) × n` part into columns `r0..` of `out (n × rows)`.
fn scatter(part: &[f32], r0: usize, rows: usize, n: usize, out: &mut [f32]) {
    for (i, row) in part.chunks_exact(n).enumerate() {
        for (t, &v) in row.iter().enumerate() {
            out[t * rows + r0 + i] = v;
        }
    }
}

/// Rows `rows` of the product, row-major into `part` (`rows.len() × n`): the portable
/// code, compiled a second time with AVX2 and FMA enabled and picked at run time on
/// x86-64 processors that have them (same arithmetic, wider registers).
fn rows_product(
    w: WeightData<'_>,
    rows: std::ops::Range<usize>,
    cols: usize,
    x: &[f32],
    n: usize,
    part: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the processor supports the features the function is compiled for.
        unsafe { rows_product_avx2(w, rows, cols, x, n, part) };
        return;
    }
    rows_product_portable(w, rows, cols, x, n, part)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn rows_product_avx2(
    w: WeightData<'_>,
    rows: std::ops::Range<usize>,
    cols: usize,
    x: &[f32],
    n: usize,
    part: &mut [f32],
) {
    rows_product_portable(w, rows, cols, x, n, part)
}

/// Each block is dequantized once (`d·q + m`, exactly the weights ggml's reference
/// dequantizer gives) and multiplied into eight running lanes per vector, a shape the
/// compiler turns into SIMD code at `opt-level` 2 and above.
#[inline(always)]
fn rows_product_portable(
    w: WeightData<'_>,
    rows: std::ops::Range<usize>,
    cols: usize,
    x: &[f32],
    n: usize,
    part: &mut [f32],
) {
    let mut lanes = vec![[0f32; 8]; n];
    match w {
        WeightData::Q4_1(data) => {
            let row_bytes = cols / QK4_1 * BlockQ4_1::BYTES;
            for (r, out) in rows.zip(part.chunks_exact_mut(n)) {
                lanes.fill([0.0; 8]);
                let (blocks, _) =
                    data[r * row_bytes..(r + 1) * row_bytes].as_chunks::<{ BlockQ4_1::BYTES }>();
                for (b, raw) in blocks.iter().enumerate() {
                    let wb = BlockQ4_1::read(raw).dequantize();
                    accumulate(&mut lanes, &wb, x, cols, b * QK4_1);
                }
                for (o, l) in out.iter_mut().zip(&lanes) {
                    *o = sum8(l);
                }
            }
        }
        WeightData::Q8_0(data) => {
            let row_bytes = cols / QK8_0 * BlockQ8_0::BYTES;
            for (r, out) in rows.zip(part.chunks_exact_mut(n)) {
                lanes.fill([0.0; 8]);
                let (blocks, _) =
                    data[r * row_bytes..(r + 1) * row_bytes].as_chunks::<{ BlockQ8_0::BYTES }>();
                for (b, raw) in blocks.iter().enumerate() {
                    let wb = BlockQ8_0::read(raw).dequantize();
                    accumulate(&mut lanes, &wb, x, cols, b * QK8_0);
                }
                for (o, l) in out.iter_mut().zip(&lanes) {
                    *o = sum8(l);
                }
            }
        }
        WeightData::F32(data) => {
            for (r, out) in rows.zip(part.chunks_exact_mut(n)) {
                let wr = &data[r * cols..(r + 1) * cols];
                for (t, o) in out.iter_mut().enumerate() {
                    *o = dot(wr, &x[t * cols..(t + 1) * cols]);
                }
            }
        }
    }
}

/// Adds `wb · x[t][at..at + 32]` into the lanes of every vector `t`.
#[inline(always)]
fn accumulate(lanes: &mut [[f32; 8]], wb: &[f32; 32], x: &[f32], cols: usize, at: usize) {
    for (t, acc) in lanes.iter_mut().enumerate() {
        let (xb, _) = x[t * cols + at..][..32].as_chunks::<8>();
        let (wc, _) = wb.as_chunks::<8>();
        for (wv, xv) in wc.iter().zip(xb) {
            for j in 0..8 {
                acc[j] += wv[j] * xv[j];
            }
        }
    }
}

#[inline(always)]
fn sum8(l: &[f32; 8]) -> f32 {
    ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]))
}

/// Dot product of two equal-length float slices.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, ra) = a.as_chunks::<8>();
    let (cb, rb) = b.as_chunks::<8>();
    for (x, y) in ca.iter().zip(cb) {
        for j in 0..8 {
            acc[j] += x[j] * y[j];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// Scalar reference: `W · x` for a Q4_1 matrix of `rows × cols` (`cols` a multiple of 32).
pub fn matvec_q4_1(blocks: &[u8], rows: usize, cols: usize, x: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; rows];
    matmul(WeightData::Q4_1(blocks), rows, cols, x, 1, &mut out);
    out
}

/// Scalar reference: `W · x` for a Q8_0 matrix of `rows × cols` (`cols` a multiple of 32).
pub fn matvec_q8_0(blocks: &[u8], rows: usize, cols: usize, x: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; rows];
    matmul(WeightData::Q8_0(blocks), rows, cols, x, 1, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let mut out = vec![0f32; n * rows];
        matmul(w, rows, cols, &x, n, &mut out);
        for t in 0..n {
            for r in 0..rows {
                let terms = (0..cols).map(|c| dense[r * cols + c] as f64 * x[t * cols + c] as f64);
                let (want, scale) = terms.fold((0.0, 0.0), |(s, a), v| (s + v, a + v.abs()));
                let got = out[t * rows + r] as f64;
                // f32 accumulation: error bounded by a few ulps of the sum of magnitudes.
                assert!(
                    (got - want).abs() <= 1e-5 * scale + 1e-6,
                    "{ty:?} r{r} t{t}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn quantized_products_match_dequantized_dense() {
        for ty in [GgmlType::Q4_1, GgmlType::Q8_0] {
            check(ty, 3, 64, 1);
            check(ty, 17, 96, 3);
            // Large enough to be split across threads.
            check(ty, 600, 512, 2);
        }
    }

    #[test]
    fn f32_product() {
        let w: Vec<f32> = (0..6).map(|i| i as f32).collect(); // 2 × 3
        let mut out = vec![0f32; 2];
        matmul(WeightData::F32(&w), 2, 3, &[1.0, 1.0, 2.0], 1, &mut out);
        assert_eq!(out, vec![0.0 + 1.0 + 4.0, 3.0 + 4.0 + 10.0]);
    }
}
