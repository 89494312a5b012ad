//! Every kernel set this processor runs against the scalar references, and the
//! references against the dequantized weights in f64.

use super::*;
use quant::{dequantize_q4_1, dequantize_q8_0};

fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

/// A small finite f16 scale with a random sign: exponent 10..14 (≈ 2^-5..2^-1).
fn scale_bits(seed: &mut u64) -> [u8; 2] {
    ((lcg(seed) as u16 & 0x83FF) | (((10 + lcg(seed) % 5) as u16) << 10)).to_le_bytes()
}

/// `n` random blocks of `block` bytes (20: Q4_1, 34: Q8_0); every byte value occurs,
/// −128 included in Q8_0.
fn blocks(n: usize, block: usize, seed: &mut u64) -> Vec<u8> {
    let mut v: Vec<u8> = (0..n * block).map(|_| lcg(seed) as u8).collect();
    for b in v.chunks_exact_mut(block) {
        b[0..2].copy_from_slice(&scale_bits(seed));
        if block == 20 {
            b[2..4].copy_from_slice(&scale_bits(seed));
        }
    }
    v
}

fn vector(n: usize, seed: &mut u64) -> Vec<f32> {
    (0..n)
        .map(|_| (lcg(seed) % 20001) as f32 / 5000.0 - 2.0)
        .collect()
}

/// Each vector's block sums.
fn sums_of(xs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    xs.iter()
        .map(|x| {
            let mut s = Vec::new();
            block_sums(x, &mut s);
            s
        })
        .collect()
}

/// A random vector of `cols` values with its block sums and its 8-bit blocks.
fn prepared(cols: usize, seed: &mut u64) -> (Vec<f32>, Vec<f32>, Vec<Q8Block>) {
    let x = vector(cols, seed);
    let mut sums = Vec::new();
    block_sums(&x, &mut sums);
    let mut xq = Vec::new();
    quantize_q8(&x, &mut xq);
    (x, sums, xq)
}

/// `(Σ w·x, Σ |w·x|)` in f64 over the dequantized row.
fn exact(w: &[f32], x: &[f32]) -> (f64, f64) {
    w.iter().zip(x).fold((0.0, 0.0), |(s, a), (&w, &x)| {
        let p = w as f64 * x as f64;
        (s + p, a + p.abs())
    })
}

fn close(got: f32, want: f64, magnitude: f64, what: &str) {
    // f32 sums of `cols` products: a few ulps of the sum of magnitudes.
    assert!(
        (got as f64 - want).abs() <= 2e-6 * magnitude + 1e-6,
        "{what}: {got} vs {want} (Σ|·| = {magnitude})"
    );
}

#[test]
fn every_kernel_matches_the_references() {
    let mut seed = 7;
    for k in Kernels::available() {
        for cols in [32, 64, 96, 576, 1536] {
            for _ in 0..20 {
                let (x, sums, xq) = prepared(cols, &mut seed);
                let xd: Vec<f32> = xq
                    .iter()
                    .flat_map(|b| b.qs.map(|q| q as f32 * b.d))
                    .collect();

                let r4 = blocks(cols / 32, 20, &mut seed);
                let mut w4 = vec![0f32; cols];
                dequantize_q4_1(&r4, &mut w4);
                let r8 = blocks(cols / 32, 34, &mut seed);
                let mut w8 = vec![0f32; cols];
                dequantize_q8_0(&r8, &mut w8);

                let n = k.name;
                let (e, m) = exact(&w4, &x);
                close(
                    (k.q4_1_f32)(&r4, &x, &sums),
                    e,
                    m,
                    &format!("{n} q4_1_f32 {cols}"),
                );
                let (e, m) = exact(&w8, &x);
                close((k.q8_0_f32)(&r8, &x), e, m, &format!("{n} q8_0_f32 {cols}"));
                // One to eight vectors at once: each exactly what the one-vector kernel
                // gives.
                let xs: Vec<Vec<f32>> = (0..MAX_VECTORS).map(|_| vector(cols, &mut seed)).collect();
                let ss = sums_of(&xs);
                for count in 1..=MAX_VECTORS {
                    let xr: Vec<&[f32]> = xs[..count].iter().map(Vec::as_slice).collect();
                    let sr: Vec<&[f32]> = ss[..count].iter().map(Vec::as_slice).collect();
                    let by_block = Vectors::transpose_sums(&sr);
                    let v = Vectors {
                        xs: &xr,
                        sums: &sr,
                        by_block: &by_block,
                    };
                    let (mut got4, mut got8) = ([0f32; MAX_VECTORS], [0f32; MAX_VECTORS]);
                    (k.q4_1_f32_xn)(&r4, v, &mut got4);
                    (k.q8_0_f32_xn)(&r8, v, &mut got8);
                    for t in 0..count {
                        let want4 = (k.q4_1_f32)(&r4, xr[t], sr[t]);
                        assert_eq!(got4[t], want4, "{n} q4_1 x{count} v{t} {cols}");
                        let want8 = (k.q8_0_f32)(&r8, xr[t]);
                        assert_eq!(got8[t], want8, "{n} q8_0 x{count} v{t} {cols}");
                    }
                }
                // And one to eight 8-bit vectors at once, each exactly as one at a time.
                let qs: Vec<Vec<Q8Block>> = xs
                    .iter()
                    .map(|x| {
                        let mut q = Vec::new();
                        quantize_q8(x, &mut q);
                        q
                    })
                    .collect();
                for count in 1..=MAX_VECTORS {
                    let qr: Vec<&[Q8Block]> = qs[..count].iter().map(Vec::as_slice).collect();
                    let (mut got4, mut got8) = ([0f32; MAX_VECTORS], [0f32; MAX_VECTORS]);
                    (k.q4_1_q8_xn)(&r4, &qr, &mut got4);
                    (k.q8_0_q8_xn)(&r8, &qr, &mut got8);
                    for t in 0..count {
                        assert_eq!(
                            got4[t],
                            (k.q4_1_q8)(&r4, qr[t]),
                            "{n} q4_1_q8 x{count} v{t} {cols}"
                        );
                        assert_eq!(
                            got8[t],
                            (k.q8_0_q8)(&r8, qr[t]),
                            "{n} q8_0_q8 x{count} v{t} {cols}"
                        );
                    }
                }
                // NEON's integer sums are exact and its scalar steps the reference's: the
                // same 8-bit results, bit for bit.
                if n == "neon" {
                    assert_eq!((k.q4_1_q8)(&r4, &xq), (SCALAR.q4_1_q8)(&r4, &xq));
                    assert_eq!((k.q8_0_q8)(&r8, &xq), (SCALAR.q8_0_q8)(&r8, &xq));
                }
                // The 8-bit kernels against the exact product with the quantized x.
                let (e, m) = exact(&w4, &xd);
                close((k.q4_1_q8)(&r4, &xq), e, m, &format!("{n} q4_1_q8 {cols}"));
                let (e, m) = exact(&w8, &xd);
                close((k.q8_0_q8)(&r8, &xq), e, m, &format!("{n} q8_0_q8 {cols}"));
                let (e, m) = exact(&w4, &x);
                close((k.f32_dot)(&w4, &x), e, m, &format!("{n} f32_dot {cols}"));
                // And a length that is not a multiple of 8 (attention heads may be any size).
                let (e, m) = exact(&w4[..cols - 3], &x[..cols - 3]);
                close(
                    (k.f32_dot)(&w4[..cols - 3], &x[..cols - 3]),
                    e,
                    m,
                    &format!("{n} f32_dot tail {cols}"),
                );
            }
        }
    }
}

/// A random row of `cols` weights of type `ty`: every byte value in codes, scales and
/// bit planes; the f16 (bf16) fields small finite values of either sign.
fn random_row(ty: GgmlType, cols: usize, seed: &mut u64) -> Vec<u8> {
    let bytes = ty.block_bytes();
    let mut row: Vec<u8> = (0..cols / ty.block_len() * bytes)
        .map(|_| lcg(seed) as u8)
        .collect();
    for b in row.chunks_exact_mut(bytes) {
        for &at in ty.half_fields() {
            b[at..at + 2].copy_from_slice(&scale_bits(seed));
        }
        if ty == GgmlType::Bf16 {
            // Sign, exponent 120..126 (2^-7..2^-1), seven mantissa bits.
            for v in b.chunks_exact_mut(2) {
                let r = lcg(seed) as u16;
                let bits = (r & 0x807F) | ((120 + r % 7) << 7);
                v.copy_from_slice(&bits.to_le_bytes());
            }
        }
    }
    row
}

#[test]
fn fused_kernels_match_the_dequantized_row() {
    use GgmlType as T;
    let types = [
        T::F16,
        T::Bf16,
        T::Q5_0,
        T::Q5_1,
        T::Q2K,
        T::Q3K,
        T::Q4K,
        T::Q5K,
        T::Q6K,
    ];
    let mut seed = 23;
    for k in Kernels::available() {
        for ty in types {
            let Some(xn) = (k.fused)(ty) else { continue };
            let group = ty.block_len().max(32);
            for cols in [group, 2 * group, 1536] {
                for _ in 0..10 {
                    let row = random_row(ty, cols, &mut seed);
                    let mut w = vec![0f32; cols];
                    ty.dequantize(&row, &mut w);
                    assert!(w.iter().all(|w| w.is_finite()), "{ty:?} test row");
                    let xs: Vec<Vec<f32>> =
                        (0..MAX_VECTORS).map(|_| vector(cols, &mut seed)).collect();
                    let ss = sums_of(&xs);
                    for count in 1..=MAX_VECTORS {
                        let xr: Vec<&[f32]> = xs[..count].iter().map(Vec::as_slice).collect();
                        let sr: Vec<&[f32]> = ss[..count].iter().map(Vec::as_slice).collect();
                        let v = Vectors {
                            xs: &xr,
                            sums: &sr,
                            by_block: &[],
                        };
                        let mut got = [0f32; MAX_VECTORS];
                        xn(&row, v, &mut got);
                        for t in 0..count {
                            let what = format!("{} {ty:?} x{count} v{t} {cols}", k.name);
                            let (e, m) = exact(&w, xr[t]);
                            close(got[t], e, m, &what);
                            // Each vector's result does not depend on the others of its call.
                            let one = Vectors {
                                xs: &xr[t..t + 1],
                                sums: &sr[t..t + 1],
                                by_block: &[],
                            };
                            let mut alone = [0f32; 1];
                            xn(&row, one, &mut alone);
                            assert_eq!(got[t], alone[0], "{what}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn four_row_kernels_give_each_row_what_the_one_row_kernel_gives() {
    let mut seed = 11;
    for k in Kernels::available() {
        let n = k.name;
        for cols in [32, 96, 576] {
            for _ in 0..20 {
                let (x, sums, xq) = prepared(cols, &mut seed);
                // Four adjacent rows of one matrix, as the matrix product hands them over.
                let m4 = blocks(4 * cols / 32, 20, &mut seed);
                let m8 = blocks(4 * cols / 32, 34, &mut seed);
                let r4: Rows4<'_> =
                    std::array::from_fn(|i| &m4[i * cols / 32 * 20..][..cols / 32 * 20]);
                let r8: Rows4<'_> =
                    std::array::from_fn(|i| &m8[i * cols / 32 * 34..][..cols / 32 * 34]);
                let (a, b) = ((k.q4_1_f32_r4)(r4, &x, &sums), (k.q8_0_f32_r4)(r8, &x));
                let (c, d) = ((k.q4_1_q8_r4)(r4, &xq), (k.q8_0_q8_r4)(r8, &xq));
                for i in 0..4 {
                    assert_eq!(
                        a[i],
                        (k.q4_1_f32)(r4[i], &x, &sums),
                        "{n} q4_1_f32 r4 {cols}"
                    );
                    assert_eq!(b[i], (k.q8_0_f32)(r8[i], &x), "{n} q8_0_f32 r4 {cols}");
                    assert_eq!(c[i], (k.q4_1_q8)(r4[i], &xq), "{n} q4_1_q8 r4 {cols}");
                    assert_eq!(d[i], (k.q8_0_q8)(r8[i], &xq), "{n} q8_0_q8 r4 {cols}");
                }
            }
        }
    }
}

#[test]
fn simd_kernels_are_present_where_the_processor_has_them() {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("f16c")
    {
        assert_eq!(Kernels::best().name, "avx2");
        // Every type without row kernels of its own has a fused one.
        for ty in GgmlType::ALL {
            let own = matches!(
                ty,
                GgmlType::F32 | GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q8_0
            );
            assert_eq!((Kernels::best().fused)(ty).is_some(), !own, "{ty:?}");
        }
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    assert_eq!(Kernels::best().name, "simd128");
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    assert_eq!(Kernels::best().name, "neon");
    assert!(Kernels::available().len() <= 2);
}

#[test]
fn q8_quantization_is_within_half_a_step() {
    let mut seed = 3;
    for _ in 0..50 {
        let mut x = vector(96, &mut seed);
        x[5] = 0.0;
        x[32..64].fill(0.0); // an all-zero block: d = 0, codes 0
        let mut q = Vec::new();
        quantize_q8(&x, &mut q);
        assert_eq!(q.len(), 3);
        assert_eq!(q[1].d, 0.0);
        for (b, xb) in q.iter().zip(x.chunks_exact(32)) {
            let sum: i32 = b.qs.iter().map(|&c| c as i32).sum();
            assert_eq!(b.s, b.d * sum as f32);
            for (&c, &v) in b.qs.iter().zip(xb) {
                assert!(c != -128);
                assert!(
                    (c as f32 * b.d - v).abs() <= b.d * 0.5 * (1.0 + 1e-5),
                    "{c} {v}"
                );
            }
        }
    }
}

/// Every set's row decoder gives the scalar dequantizer's floats, bit for bit, on the
/// `quant` fixtures (random blocks of every type but F32, checked there against the
/// `gguf` package).
#[test]
fn every_row_decoder_matches_the_scalar_dequantizer() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../quant/fixtures");
    for ty in GgmlType::ALL.into_iter().filter(|&t| t != GgmlType::F32) {
        let data = std::fs::read(dir.join(format!("{}.blocks", ty.name())))
            .unwrap_or_else(|e| panic!("{}: {e}", ty.name()));
        let n = data.len() / ty.block_bytes() * ty.block_len();
        let mut want = vec![0f32; n];
        (SCALAR.decode_row)(ty, &data, &mut want);
        for k in Kernels::available() {
            let mut got = vec![0f32; n];
            (k.decode_row)(ty, &data, &mut got);
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{} {}", k.name, ty.name());
        }
    }
}

/// Attention's page kernels give, bit for bit, the one-row arithmetic: each score what
/// `f32_dot` gives for that key, and the weighted sum the scalar loop's floats; for head
/// sizes with and without a multiple of eight (and of 64), any number of rows of a page,
/// rows laid out as the KV cache lays them (a head's slice of each position's row).
#[test]
fn attention_page_kernels_give_the_one_row_floats() {
    let mut seed = 11;
    for k in Kernels::available() {
        for (head, stride) in [(64, 192), (128, 256), (61, 64), (8, 24), (3, 9)] {
            for count in [0, 1, 3, 4, 5, 15, 16] {
                // The last head of each row, and nothing after the last row's (as on a
                // partly filled page's last group): a kernel reading past it panics.
                let rows = vector(count.max(1) * stride, &mut seed);
                let at = stride - head;
                let rows = &rows[at..];
                let q = vector(head, &mut seed);
                let mut scores = vec![f32::NAN; count];
                (k.f32_dots)(&q, rows, stride, &mut scores);
                for (j, &s) in scores.iter().enumerate() {
                    let want = (k.f32_dot)(&q, &rows[j * stride..][..head]);
                    assert_eq!(
                        s.to_bits(),
                        want.to_bits(),
                        "{} dots {head} row {j}",
                        k.name
                    );
                }
                let start = vector(head, &mut seed);
                let (mut got, mut want) = (start.clone(), start);
                (k.f32_axpys)(&q[..count.min(head)], rows, stride, &mut got);
                for (j, &p) in q[..count.min(head)].iter().enumerate() {
                    for (w, &v) in want.iter_mut().zip(&rows[j * stride..][..head]) {
                        *w += p * v;
                    }
                }
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{} axpys {head} x{count}", k.name);
            }
        }
    }
}
