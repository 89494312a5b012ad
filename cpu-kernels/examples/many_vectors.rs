//! How much the many-vector kernels save over one vector at a time: one Q4_1 and one Q8_0
//! matrix of SmolLM2's shape (1536 × 576) times 8 f32 vectors, with this processor's best
//! kernels, the two ways interleaved. Prints medians and the median ratio.
//!
//! `cargo run --release -p cpu-kernels --example many_vectors`; for the page's kernels,
//! in wasm with simd128 under node's WASI (as the `wasm` test stage runs them):
//! `CARGO_TARGET_WASM32_WASIP1_RUNNER="node xtask/wasi_run.mjs"
//! CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS="-C target-feature=+simd128" cargo run --release
//! -p cpu-kernels --example many_vectors --target wasm32-wasip1`.

use cpu_kernels::{Kernels, MAX_VECTORS, Vectors, block_sums};
use std::hint::black_box;
use std::time::Instant;

const ROWS: usize = 1536;
const COLS: usize = 576;
const ROUNDS: usize = 15;

fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

/// Random blocks of `bytes` each, the first two bytes a small f16 scale (and, for Q4_1,
/// the next two a small f16 minimum).
fn matrix(block: usize, seed: &mut u64) -> Vec<u8> {
    let mut m = vec![0u8; ROWS * COLS / 32 * block];
    for b in m.chunks_exact_mut(block) {
        for byte in b.iter_mut() {
            *byte = lcg(seed) as u8;
        }
        b[..2].copy_from_slice(&[0x00, 0x20]); // 2^-7
        if block == 20 {
            b[2..4].copy_from_slice(&[0x00, 0xa0]); // −2^-7
        }
    }
    m
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let k = Kernels::best();
    let mut seed = 1;
    let xs: Vec<Vec<f32>> = (0..MAX_VECTORS)
        .map(|_| {
            (0..COLS)
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
    let xr: Vec<&[f32]> = xs.iter().map(Vec::as_slice).collect();
    let sr: Vec<&[f32]> = sums.iter().map(Vec::as_slice).collect();
    let by_block = Vectors::transpose_sums(&sr);
    let v = Vectors {
        xs: &xr,
        sums: &sr,
        by_block: &by_block,
    };
    println!(
        "kernels: {} · {ROWS} × {COLS} matrix · {MAX_VECTORS} f32 vectors · {ROUNDS} interleaved rounds",
        k.name
    );
    println!("type | one at a time ms | many-vector ms | ratio (median of rounds)");
    for (name, block) in [("q4_1", 20usize), ("q8_0", 34)] {
        let m = matrix(block, &mut seed);
        let row_bytes = COLS / 32 * block;
        let mut out = [0f32; MAX_VECTORS];
        let (mut one, mut many, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let t = Instant::now();
            let mut acc = 0f32;
            for row in m.chunks_exact(row_bytes) {
                for i in 0..MAX_VECTORS {
                    acc += if block == 20 {
                        (k.q4_1_f32)(row, xr[i], sr[i])
                    } else {
                        (k.q8_0_f32)(row, xr[i])
                    };
                }
            }
            black_box(acc);
            let a = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            for row in m.chunks_exact(row_bytes) {
                if block == 20 {
                    (k.q4_1_f32_xn)(row, v, &mut out);
                } else {
                    (k.q8_0_f32_xn)(row, v, &mut out);
                }
                black_box(&out);
            }
            let b = t.elapsed().as_secs_f64() * 1e3;
            one.push(a);
            many.push(b);
            ratio.push(a / b);
        }
        println!(
            "{name} | {:.2} | {:.2} | {:.2}×",
            median(one),
            median(many),
            median(ratio)
        );
    }
}
