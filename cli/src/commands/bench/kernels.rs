//! `strait bench kernels`: each fused decode-and-dot kernel beside what the kernel set
//! does without it (decode the row to f32, then one f32 dot product per vector), on one
//! thread, for one and for eight activation vectors, on a matrix of SmolLM2's down
//! projection's shape filled with random blocks.

use crate::args::BenchArgs;
use crate::failure::Result;
use lm::forward::Kernels;
use lm::forward::kernels::{MAX_VECTORS, Vectors, block_sums};
use lm::gguf::GgmlType;
use std::time::Instant;

/// Rows and columns of the matrix (SmolLM2's `ffn_down`: 576 × 1536; 1536 is a whole
/// number of K-quant blocks).
const SHAPE: (usize, usize) = (576, 1536);

/// Prints one JSON line per type and vector count, then a table on stderr.
pub fn run(_: &BenchArgs) -> Result<()> {
    let k = Kernels::best();
    let (rows, cols) = SHAPE;
    let mut seed = 7u64;
    let xs: Vec<Vec<f32>> = (0..MAX_VECTORS)
        .map(|_| {
            (0..cols)
                .map(|_| (lcg(&mut seed) % 2001) as f32 / 1000.0 - 1.0)
                .collect()
        })
        .collect();
    let sums: Vec<Vec<f32>> = xs
        .iter()
        .map(|x| {
            let mut s = Vec::new();
            block_sums(x, &mut s);
            s
        })
        .collect();
    let mut table = vec![format!(
        "kernels {} · {rows}×{cols} · 1 thread · µs per matrix (median of 7)\n\n| type | vectors | fused | decode + dot | fused / (decode + dot) |\n|---|---:|---:|---:|---:|",
        k.name
    )];
    for &ty in GgmlType::ALL.iter() {
        let Some(fused) = (k.fused)(ty) else { continue };
        let data = random_matrix(ty, rows, cols, &mut seed);
        let row_bytes = cols / ty.block_len() * ty.block_bytes();
        for n in [1, MAX_VECTORS] {
            let xr: Vec<&[f32]> = xs[..n].iter().map(Vec::as_slice).collect();
            let sr: Vec<&[f32]> = sums[..n].iter().map(Vec::as_slice).collect();
            let mut out = [0f32; MAX_VECTORS];
            let fused_us = median_us(|| {
                for row in data.chunks_exact(row_bytes) {
                    let v = Vectors {
                        xs: &xr,
                        sums: &sr,
                        by_block: &[],
                    };
                    fused(row, v, &mut out);
                    std::hint::black_box(&out);
                }
            });
            let mut scratch = vec![0f32; cols];
            let decoded_us = median_us(|| {
                for row in data.chunks_exact(row_bytes) {
                    (k.decode_row)(ty, row, &mut scratch);
                    for (o, x) in out.iter_mut().zip(&xr) {
                        *o = (k.f32_dot)(&scratch, x);
                    }
                    std::hint::black_box(&out);
                }
            });
            let ratio = fused_us / decoded_us;
            crate::stdout::line(serde_json::json!({
                "kernels": k.name,
                "type": ty.name(),
                "rows": rows,
                "cols": cols,
                "vectors": n,
                "fused_us": fused_us,
                "decoded_us": decoded_us,
                "fused_over_decoded": ratio,
            }));
            table.push(format!(
                "| {} | {n} | {fused_us:.0} | {decoded_us:.0} | {ratio:.2} |",
                ty.name()
            ));
        }
    }
    headless::note!("{}", table.join("\n"));
    Ok(())
}

/// A matrix of random blocks of `ty`, its f16 fields (and BF16 values) small and finite.
fn random_matrix(ty: GgmlType, rows: usize, cols: usize, seed: &mut u64) -> Vec<u8> {
    let bytes = ty.block_bytes();
    let mut data: Vec<u8> = (0..rows * cols / ty.block_len() * bytes)
        .map(|_| lcg(seed) as u8)
        .collect();
    for b in data.chunks_exact_mut(bytes) {
        for &at in ty.half_fields() {
            // ±2^-4 · (1 + mantissa): exponent 11.
            let h = (lcg(seed) as u16 & 0x83FF) | (11 << 10);
            b[at..at + 2].copy_from_slice(&h.to_le_bytes());
        }
        if ty == GgmlType::Bf16 {
            // ±2^-4 · (1 + mantissa): exponent 123.
            let h = (lcg(seed) as u16 & 0x807F) | (123 << 7);
            b.copy_from_slice(&h.to_le_bytes());
        }
    }
    data
}

/// Median wall time of seven runs of `f`, each repeated to take at least 20 ms, in µs
/// per call.
fn median_us(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    f();
    let once = start.elapsed().as_secs_f64().max(1e-6);
    let reps = ((0.02 / once).ceil() as usize).max(1);
    let mut times: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                f();
            }
            start.elapsed().as_secs_f64() * 1e6 / reps as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[3]
}

/// A linear congruential generator's top bits (a fixed, seeded matrix).
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}
