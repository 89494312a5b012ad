//! Dot products of one quantized weight row with one activation vector: the inner loop
//! of every matrix product of the forward pass.
//!
//! Each kernel has a scalar reference (`scalar.rs`) and SIMD versions: AVX2 + FMA + F16C
//! on x86-64, detected at run time (`avx2.rs`), NEON on aarch64 (every aarch64 processor
//! has it: `neon.rs`), and `simd128` on wasm32 when the build enables it (`simd128.rs`). [`Kernels::best`] picks once per process; a test compares
//! every version with the reference on random blocks.
//!
//! Activations come in two precisions ([`Activations`]): f32, so the product is the
//! dequantized weights times `x` up to f32 rounding (the default: it matches a float64
//! forward pass to 1e-4 nats), or 8 bits per block of 32 with integer dot products, the
//! arithmetic of llama.cpp: faster, and as far from exact as llama.cpp is.

#![deny(missing_docs)]

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod q8;
pub mod scalar;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;
#[cfg(test)]
mod tests;

pub use q8::{Q8Block, block_sums, quantize_q8};

use quant::GgmlType;

/// How activations enter the matrix products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Activations {
    /// f32 activations against the dequantized weights (exact up to f32 rounding).
    #[default]
    F32,
    /// Activations quantized to 8 bits per block of 32, integer dot products (llama.cpp's).
    Q8,
}

impl Activations {
    /// The name used on the command line and in benchmark output (`f32`, `q8`).
    pub fn name(self) -> &'static str {
        match self {
            Activations::F32 => "f32",
            Activations::Q8 => "q8",
        }
    }

    /// Parses [`Activations::name`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "f32" => Some(Activations::F32),
            "q8" => Some(Activations::Q8),
            _ => None,
        }
    }
}

/// The most activation vectors one many-vector kernel call takes.
pub const MAX_VECTORS: usize = 8;

/// Up to [`MAX_VECTORS`] f32 activation vectors for the many-vector kernels: the vectors,
/// each one's block sums, and the same sums by block (`by_block[b][v]`, lanes past the
/// last vector zero), the layout the AVX2 kernel adds eight at a time.
#[derive(Debug, Clone, Copy)]
pub struct Vectors<'a> {
    /// The activation vectors, all at least as long as the row.
    pub xs: &'a [&'a [f32]],
    /// Each vector's block sums (`block_sums`).
    pub sums: &'a [&'a [f32]],
    /// The block sums by block, then vector.
    pub by_block: &'a [[f32; MAX_VECTORS]],
}

impl<'a> Vectors<'a> {
    /// How many vectors.
    pub fn len(&self) -> usize {
        self.xs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.xs.is_empty()
    }

    /// The block sums by block of `sums` (what [`Vectors::by_block`] holds).
    pub fn transpose_sums(sums: &[&[f32]]) -> Vec<[f32; MAX_VECTORS]> {
        assert!(sums.len() <= MAX_VECTORS, "at most {MAX_VECTORS} vectors");
        let nb = sums.iter().map(|s| s.len()).min().unwrap_or(0);
        (0..nb)
            .map(|b| std::array::from_fn(|v| sums.get(v).map_or(0.0, |s| s[b])))
            .collect()
    }
}

/// A row · up to eight f32 vectors kernel, results into `out[..n]`.
pub type RowsDotMany = fn(&[u8], Vectors<'_>, &mut [f32]);

/// Four weight rows of the same length, for the four-row kernels.
pub type Rows4<'a> = [&'a [u8]; 4];

/// One set of row kernels (see `scalar.rs` for what each computes).
#[derive(Clone, Copy)]
pub struct Kernels {
    /// Which instruction set: `scalar`, `avx2` or `simd128`.
    pub name: &'static str,
    /// Q4_1 row · f32 vector, with the vector's block sums.
    pub q4_1_f32: fn(&[u8], &[f32], &[f32]) -> f32,
    /// Q8_0 row · f32 vector.
    pub q8_0_f32: fn(&[u8], &[f32]) -> f32,
    /// Q4_1 row · up to eight f32 vectors into `out[..n]` (each result as `q4_1_f32`
    /// gives it).
    pub q4_1_f32_xn: fn(&[u8], Vectors<'_>, &mut [f32]),
    /// Q8_0 row · up to eight f32 vectors into `out[..n]` (each result as `q8_0_f32`
    /// gives it).
    pub q8_0_f32_xn: fn(&[u8], Vectors<'_>, &mut [f32]),
    /// Four Q4_1 rows · one f32 vector (each result as `q4_1_f32` gives it).
    pub q4_1_f32_r4: fn(Rows4<'_>, &[f32], &[f32]) -> [f32; 4],
    /// Four Q8_0 rows · one f32 vector (each result as `q8_0_f32` gives it).
    pub q8_0_f32_r4: fn(Rows4<'_>, &[f32]) -> [f32; 4],
    /// Q4_1 row · 8-bit vector.
    pub q4_1_q8: fn(&[u8], &[Q8Block]) -> f32,
    /// Q8_0 row · 8-bit vector.
    pub q8_0_q8: fn(&[u8], &[Q8Block]) -> f32,
    /// Q4_1 row · up to eight 8-bit vectors into `out[..n]` (each result as `q4_1_q8`
    /// gives it).
    pub q4_1_q8_xn: fn(&[u8], &[&[Q8Block]], &mut [f32]),
    /// Q8_0 row · up to eight 8-bit vectors into `out[..n]` (each result as `q8_0_q8`
    /// gives it).
    pub q8_0_q8_xn: fn(&[u8], &[&[Q8Block]], &mut [f32]),
    /// Four Q4_1 rows · one 8-bit vector (each result as `q4_1_q8` gives it).
    pub q4_1_q8_r4: fn(Rows4<'_>, &[Q8Block]) -> [f32; 4],
    /// Four Q8_0 rows · one 8-bit vector (each result as `q8_0_q8` gives it).
    pub q8_0_q8_r4: fn(Rows4<'_>, &[Q8Block]) -> [f32; 4],
    /// f32 · f32.
    pub f32_dot: fn(&[f32], &[f32]) -> f32,
    /// `f32_dot(q, row_j)` into `out[j]` for `out.len()` rows `stride` floats apart
    /// (attention's scores over a page of keys; each exactly as `f32_dot` gives it).
    pub f32_dots: fn(&[f32], &[f32], usize, &mut [f32]),
    /// `acc += p[j]·row_j` for each row in turn, rows `stride` floats apart, each product
    /// rounded before it is added (attention's weighted sum of a page of values; exactly
    /// the scalar loop's floats).
    pub f32_axpys: fn(&[f32], &[f32], usize, &mut [f32]),
    /// The fused decode-and-dot kernel of a block type without row kernels of its own, one
    /// row · up to eight f32 vectors into `out[..n]` (with each vector's block sums of 32),
    /// where the set has one; else such rows are decoded by `decode_row` and multiplied by
    /// `f32_dot`. F16 and BF16 kernels take rows of whole groups of 32 values.
    pub fused: fn(GgmlType) -> Option<RowsDotMany>,
    /// Decodes whole blocks of a type without row kernels into f32 (`quant`'s
    /// dequantizers, compiled for this instruction set: the same floats).
    pub decode_row: fn(GgmlType, &[u8], &mut [f32]),
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernels").field("name", &self.name).finish()
    }
}

/// The scalar references.
pub const SCALAR: Kernels = Kernels {
    name: "scalar",
    q4_1_f32: scalar::q4_1_f32,
    q8_0_f32: scalar::q8_0_f32,
    q4_1_f32_xn: scalar::q4_1_f32_xn,
    q8_0_f32_xn: scalar::q8_0_f32_xn,
    q4_1_f32_r4: scalar::q4_1_f32_r4,
    q8_0_f32_r4: scalar::q8_0_f32_r4,
    q4_1_q8: scalar::q4_1_q8,
    q8_0_q8: scalar::q8_0_q8,
    q4_1_q8_xn: scalar::q4_1_q8_xn,
    q8_0_q8_xn: scalar::q8_0_q8_xn,
    q4_1_q8_r4: scalar::q4_1_q8_r4,
    q8_0_q8_r4: scalar::q8_0_q8_r4,
    f32_dot: scalar::f32_dot,
    f32_dots: scalar::f32_dots,
    f32_axpys: scalar::f32_axpys,
    fused: |ty| match ty {
        GgmlType::Q4K => Some(scalar::q4_k_f32_xn),
        GgmlType::Q5_0 => Some(scalar::q5_0_f32_xn),
        _ => None,
    },
    decode_row: |ty, data, out| ty.dequantize(data, out),
};

#[cfg(target_arch = "x86_64")]
mod avx2_table {
    //! Safe entry points to `avx2.rs`; only [`super::Kernels::best`] hands them out,
    //! after checking that the processor has the features.
    use super::{GgmlType, Kernels, Q8Block, Rows4, RowsDotMany, Vectors, avx2};

    // SAFETY (each function): reachable only through `AVX2`, which `Kernels::best` returns
    // only when `is_x86_feature_detected!` found avx2, fma and f16c.
    fn q4_1_f32(r: &[u8], x: &[f32], s: &[f32]) -> f32 {
        unsafe { avx2::q4_1_f32(r, x, s) }
    }
    fn q8_0_f32(r: &[u8], x: &[f32]) -> f32 {
        unsafe { avx2::q8_0_f32(r, x) }
    }
    fn q4_1_f32_xn(r: &[u8], x: Vectors<'_>, out: &mut [f32]) {
        unsafe { avx2::q4_1_f32_xn(r, x, out) }
    }
    fn q8_0_f32_xn(r: &[u8], x: Vectors<'_>, out: &mut [f32]) {
        unsafe { avx2::q8_0_f32_xn(r, x, out) }
    }
    fn q4_1_f32_r4(r: Rows4<'_>, x: &[f32], s: &[f32]) -> [f32; 4] {
        unsafe { avx2::q4_1_f32_r4(r, x, s) }
    }
    fn q8_0_f32_r4(r: Rows4<'_>, x: &[f32]) -> [f32; 4] {
        unsafe { avx2::q8_0_f32_r4(r, x) }
    }
    fn q4_1_q8_xn(r: &[u8], y: &[&[Q8Block]], out: &mut [f32]) {
        unsafe { avx2::q4_1_q8_xn(r, y, out) }
    }
    fn q8_0_q8_xn(r: &[u8], y: &[&[Q8Block]], out: &mut [f32]) {
        unsafe { avx2::q8_0_q8_xn(r, y, out) }
    }
    fn q4_1_q8_r4(r: Rows4<'_>, y: &[Q8Block]) -> [f32; 4] {
        unsafe { avx2::q4_1_q8_r4(r, y) }
    }
    fn q8_0_q8_r4(r: Rows4<'_>, y: &[Q8Block]) -> [f32; 4] {
        unsafe { avx2::q8_0_q8_r4(r, y) }
    }
    fn q4_1_q8(r: &[u8], y: &[Q8Block]) -> f32 {
        unsafe { avx2::q4_1_q8(r, y) }
    }
    fn q8_0_q8(r: &[u8], y: &[Q8Block]) -> f32 {
        unsafe { avx2::q8_0_q8(r, y) }
    }
    fn f32_dot(a: &[f32], b: &[f32]) -> f32 {
        unsafe { avx2::f32_dot(a, b) }
    }
    fn f32_dots(q: &[f32], rows: &[f32], stride: usize, out: &mut [f32]) {
        unsafe { avx2::attention::f32_dots(q, rows, stride, out) }
    }
    fn f32_axpys(p: &[f32], rows: &[f32], stride: usize, acc: &mut [f32]) {
        unsafe { avx2::attention::f32_axpys(p, rows, stride, acc) }
    }
    fn decode_row(ty: GgmlType, data: &[u8], out: &mut [f32]) {
        unsafe { avx2::decode_row(ty, data, out) }
    }
    fn q4_k_f32_xn(r: &[u8], x: Vectors<'_>, out: &mut [f32]) {
        unsafe { avx2::q4_k_f32_xn(r, x, out) }
    }
    fn fused_xn<T: avx2::fused::Fused>(r: &[u8], x: Vectors<'_>, out: &mut [f32]) {
        unsafe { avx2::fused::xn::<T>(r, x, out) }
    }
    fn fused(ty: GgmlType) -> Option<RowsDotMany> {
        use avx2::fused::{Bf16, F16, Q2K, Q3K, Q5_0, Q5_1, Q5K, Q6K};
        Some(match ty {
            GgmlType::F16 => fused_xn::<F16>,
            GgmlType::Bf16 => fused_xn::<Bf16>,
            GgmlType::Q5_0 => fused_xn::<Q5_0>,
            GgmlType::Q5_1 => fused_xn::<Q5_1>,
            GgmlType::Q2K => fused_xn::<Q2K>,
            GgmlType::Q3K => fused_xn::<Q3K>,
            GgmlType::Q4K => q4_k_f32_xn,
            GgmlType::Q5K => fused_xn::<Q5K>,
            GgmlType::Q6K => fused_xn::<Q6K>,
            GgmlType::F32 | GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q8_0 => return None,
        })
    }

    pub(super) const AVX2: Kernels = Kernels {
        name: "avx2",
        q4_1_f32,
        q8_0_f32,
        q4_1_f32_xn,
        q8_0_f32_xn,
        q4_1_f32_r4,
        q8_0_f32_r4,
        q4_1_q8,
        q8_0_q8,
        q4_1_q8_xn,
        q8_0_q8_xn,
        q4_1_q8_r4,
        q8_0_q8_r4,
        f32_dot,
        f32_dots,
        f32_axpys,
        fused,
        decode_row,
    };

    pub(super) fn supported() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
    }
}

/// The wasm `simd128` kernels (compiled in only when the build enables the feature).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub const SIMD128: Kernels = Kernels {
    name: "simd128",
    q4_1_f32: simd128::q4_1_f32,
    q8_0_f32: simd128::q8_0_f32,
    q4_1_f32_xn: simd128::q4_1_f32_xn,
    q8_0_f32_xn: simd128::q8_0_f32_xn,
    q4_1_f32_r4: |r, x, s| r.map(|r| simd128::q4_1_f32(r, x, s)),
    q8_0_f32_r4: |r, x| r.map(|r| simd128::q8_0_f32(r, x)),
    q4_1_q8: simd128::q4_1_q8,
    q8_0_q8: simd128::q8_0_q8,
    q4_1_q8_xn: |r, y, out| {
        for (o, y) in out[..y.len()].iter_mut().zip(y) {
            *o = simd128::q4_1_q8(r, y);
        }
    },
    q8_0_q8_xn: |r, y, out| {
        for (o, y) in out[..y.len()].iter_mut().zip(y) {
            *o = simd128::q8_0_q8(r, y);
        }
    },
    q4_1_q8_r4: |r, y| r.map(|r| simd128::q4_1_q8(r, y)),
    q8_0_q8_r4: |r, y| r.map(|r| simd128::q8_0_q8(r, y)),
    f32_dot: simd128::f32_dot,
    f32_dots: simd128::attention::f32_dots,
    f32_axpys: simd128::attention::f32_axpys,
    // Decoding (vectorized) then the simd128 dot product.
    fused: |_| None,
    // The whole wasm build has simd128: `quant`'s loops are vectorized already.
    decode_row: |ty, data, out| ty.dequantize(data, out),
};

/// The NEON kernels (aarch64); the many-vector and four-row forms loop over the one-row,
/// one-vector kernels, so each result is exactly theirs.
// SAFETY (each call): the table exists only where the target has NEON.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
pub const NEON: Kernels = Kernels {
    name: "neon",
    q4_1_f32: |r, x, s| unsafe { neon::q4_1_f32(r, x, s) },
    q8_0_f32: |r, x| unsafe { neon::q8_0_f32(r, x) },
    q4_1_f32_xn: |r, x, out| {
        for (v, o) in out[..x.len()].iter_mut().enumerate() {
            *o = unsafe { neon::q4_1_f32(r, x.xs[v], x.sums[v]) };
        }
    },
    q8_0_f32_xn: |r, x, out| {
        for (v, o) in out[..x.len()].iter_mut().enumerate() {
            *o = unsafe { neon::q8_0_f32(r, x.xs[v]) };
        }
    },
    q4_1_f32_r4: |r, x, s| r.map(|r| unsafe { neon::q4_1_f32(r, x, s) }),
    q8_0_f32_r4: |r, x| r.map(|r| unsafe { neon::q8_0_f32(r, x) }),
    q4_1_q8: |r, y| unsafe { neon::q4_1_q8(r, y) },
    q8_0_q8: |r, y| unsafe { neon::q8_0_q8(r, y) },
    q4_1_q8_xn: |r, y, out| {
        for (o, y) in out[..y.len()].iter_mut().zip(y) {
            *o = unsafe { neon::q4_1_q8(r, y) };
        }
    },
    q8_0_q8_xn: |r, y, out| {
        for (o, y) in out[..y.len()].iter_mut().zip(y) {
            *o = unsafe { neon::q8_0_q8(r, y) };
        }
    },
    q4_1_q8_r4: |r, y| r.map(|r| unsafe { neon::q4_1_q8(r, y) }),
    q8_0_q8_r4: |r, y| r.map(|r| unsafe { neon::q8_0_q8(r, y) }),
    f32_dot: |a, b| unsafe { neon::f32_dot(a, b) },
    f32_dots: |q, rows, stride, out| {
        for (j, o) in out.iter_mut().enumerate() {
            *o = unsafe { neon::f32_dot(q, &rows[j * stride..][..q.len()]) };
        }
    },
    // The scalar loop, which the compiler vectorizes for NEON (a multiply, then an add).
    f32_axpys: scalar::f32_axpys,
    fused: |_| None,
    // NEON is part of the target: `quant`'s loops are vectorized for it already.
    decode_row: |ty, data, out| ty.dequantize(data, out),
};

/// The first `nb` blocks of 32 activations of `x` (panics if `x` is shorter): the SIMD
/// kernels check a vector's length once this way, then index its blocks.
#[cfg(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
fn blocks_of(x: &[f32], nb: usize) -> &[[f32; 32]] {
    x[..nb * 32].as_chunks::<32>().0
}

/// The fastest kernels for this processor.
fn detect() -> Kernels {
    #[cfg(target_arch = "x86_64")]
    {
        if avx2_table::supported() {
            avx2_table::AVX2
        } else {
            SCALAR
        }
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        SIMD128
    }
    #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
    {
        NEON
    }
    #[cfg(not(any(
        target_arch = "x86_64",
        all(target_arch = "aarch64", target_feature = "neon"),
        all(target_arch = "wasm32", target_feature = "simd128")
    )))]
    {
        SCALAR
    }
}

impl Kernels {
    /// The fastest kernels this processor runs (checked once).
    pub fn best() -> &'static Kernels {
        static BEST: std::sync::OnceLock<Kernels> = std::sync::OnceLock::new();
        BEST.get_or_init(detect)
    }

    /// Every set this processor can run, the scalar references first (for tests and
    /// benchmarks).
    pub fn available() -> Vec<&'static Kernels> {
        let mut v: Vec<&'static Kernels> = vec![&SCALAR];
        let best = Kernels::best();
        if best.name != SCALAR.name {
            v.push(best);
        }
        v
    }
}
