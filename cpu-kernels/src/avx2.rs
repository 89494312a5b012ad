//! x86-64 kernels with AVX2, FMA and F16C, chosen at run time by [`super::best`].
//!
//! Same sums as `scalar.rs`, eight lanes at a time: f32 activations multiply weights
//! widened to f32; 8-bit activations use `maddubs` (u8 × i8 pairs to i16) and `madd`
//! (i16 pairs to i32), the integer path of the fast engines.

use super::q8::Q8Block;
use super::{MAX_VECTORS, Vectors, blocks_of};
use quant::{BlockQ4_1, BlockQ8_0};
use std::arch::x86_64::*;

/// `$f::<…, N>(args)` for `N` = `$n`, 1 to [`MAX_VECTORS`]: the many-vector kernels are
/// compiled once per vector count, so each keeps its accumulators in registers.
macro_rules! by_count {
    ($n:expr, $f:ident $(<$($g:ty),+>)? ($($arg:expr),*)) => {
        match $n {
            1 => $f::<$($($g,)+)? 1>($($arg),*),
            2 => $f::<$($($g,)+)? 2>($($arg),*),
            3 => $f::<$($($g,)+)? 3>($($arg),*),
            4 => $f::<$($($g,)+)? 4>($($arg),*),
            5 => $f::<$($($g,)+)? 5>($($arg),*),
            6 => $f::<$($($g,)+)? 6>($($arg),*),
            7 => $f::<$($($g,)+)? 7>($($arg),*),
            8 => $f::<$($($g,)+)? 8>($($arg),*),
            n => panic!("{n} vectors: the many-vector kernels take 1 to {MAX_VECTORS}"),
        }
    };
}

pub mod attention;
pub mod fused;

/// Half-precision bits to f32 by F16C (exact, as `f16_to_f32`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn half(lo: u8, hi: u8) -> f32 {
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(
        u16::from_le_bytes([lo, hi]) as i32,
    )))
}

/// Sum of the eight lanes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    let s = _mm_add_ss(s, _mm_movehdup_ps(s));
    _mm_cvtss_f32(s)
}

/// Eight unsigned bytes (the low half of `v`) as f32.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn u8x8_f32(v: __m128i) -> __m256 {
    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v))
}

/// Eight signed bytes (the low half of `v`) as f32.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn i8x8_f32(v: __m128i) -> __m256 {
    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))
}

/// Eight floats from `x[at..at + 8]` (bounds checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn load8(x: &[f32], at: usize) -> __m256 {
    let c: &[f32; 8] = x[at..at + 8].try_into().expect("8 floats");
    // SAFETY: `c` is 8 readable floats; loadu has no alignment requirement.
    unsafe { _mm256_loadu_ps(c.as_ptr()) }
}

/// 16 bytes from `b[at..at + 16]` (bounds checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn load16(b: &[u8], at: usize) -> __m128i {
    let c: &[u8; 16] = b[at..at + 16].try_into().expect("16 bytes");
    // SAFETY: `c` is 16 readable bytes; loadu has no alignment requirement.
    unsafe { _mm_loadu_si128(c.as_ptr().cast()) }
}

/// 32 bytes from `b[at..at + 32]` (bounds checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn load32(b: &[u8], at: usize) -> __m256i {
    let c: &[u8; 32] = b[at..at + 32].try_into().expect("32 bytes");
    // SAFETY: `c` is 32 readable bytes; loadu has no alignment requirement.
    unsafe { _mm256_loadu_si256(c.as_ptr().cast()) }
}

/// The 32 codes of a Q8 activation block.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn codes(y: &Q8Block) -> __m256i {
    // SAFETY: `qs` is 32 readable bytes.
    unsafe { _mm256_loadu_si256(y.qs.as_ptr().cast()) }
}

/// A Q4_1 block's 32 codes (0..=15) as f32, in order, in four registers.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_1_widen(raw: &[u8]) -> [__m256; 4] {
    let low = _mm_set1_epi8(0x0F);
    let qs = load16(raw, 4);
    let lo = _mm_and_si128(qs, low); // weights 0..16
    let hi = _mm_and_si128(_mm_srli_epi16::<4>(qs), low); // weights 16..32
    [
        u8x8_f32(lo),
        u8x8_f32(_mm_srli_si128::<8>(lo)),
        u8x8_f32(hi),
        u8x8_f32(_mm_srli_si128::<8>(hi)),
    ]
}

/// A Q8_0 block's 32 codes as f32, in order, in four registers.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q8_0_widen(raw: &[u8]) -> [__m256; 4] {
    let (q0, q1) = (load16(raw, 2), load16(raw, 18));
    [
        i8x8_f32(q0),
        i8x8_f32(_mm_srli_si128::<8>(q0)),
        i8x8_f32(q1),
        i8x8_f32(_mm_srli_si128::<8>(q1)),
    ]
}

/// 32 activations in four registers.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn load_block(xb: &[f32; 32]) -> [__m256; 4] {
    [load8(xb, 0), load8(xb, 8), load8(xb, 16), load8(xb, 24)]
}

/// `Σ w·x` over one block, eight lanes: the order of operations of every f32 kernel, so
/// that the one-row, four-row and many-vector kernels agree bit for bit.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn dot_block(w: &[__m256; 4], x: &[__m256; 4]) -> __m256 {
    let s0 = _mm256_fmadd_ps(w[1], x[1], _mm256_mul_ps(w[0], x[0]));
    let s1 = _mm256_fmadd_ps(w[3], x[3], _mm256_mul_ps(w[2], x[2]));
    _mm256_add_ps(s0, s1)
}

/// Block `b` of `x` in four registers, unchecked (the many-vector kernels check the
/// lengths once per row instead of once per block and vector).
///
/// # Safety
/// `x` holds at least `b·32 + 32` floats.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn load_block_at(x: &[f32], b: usize) -> [__m256; 4] {
    // SAFETY: the caller's bound; loadu has no alignment requirement.
    let ld = |i: usize| unsafe { _mm256_loadu_ps(x.as_ptr().add(b * 32 + i)) };
    [ld(0), ld(8), ld(16), ld(24)]
}

/// [`super::scalar::q4_1_f32`].
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q4_1_f32(row: &[u8], x: &[f32], xsum: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let xb = blocks_of(x, blocks.len());
    let mut acc = _mm256_setzero_ps();
    let mut mins = 0f32;
    for ((raw, xb), &s) in blocks.iter().zip(xb).zip(xsum) {
        let d = _mm256_set1_ps(half(raw[0], raw[1]));
        let sum = dot_block(&q4_1_widen(raw), &load_block(xb));
        acc = _mm256_fmadd_ps(d, sum, acc);
        mins += half(raw[2], raw[3]) * s;
    }
    hsum(acc) + mins
}

/// A Q4_K block's 64 weights `32k .. 32k + 64` of its codes as f32, in order, in two sets
/// of four registers: the low nibbles (sub-block 2k) and the high ones (2k + 1).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_k_widen(b: &[u8], k: usize) -> ([__m256; 4], [__m256; 4]) {
    let low = _mm_set1_epi8(0x0F);
    let (qa, qb) = (load16(b, 16 + 32 * k), load16(b, 32 + 32 * k));
    let widen = |a: __m128i, b: __m128i| {
        [
            u8x8_f32(a),
            u8x8_f32(_mm_srli_si128::<8>(a)),
            u8x8_f32(b),
            u8x8_f32(_mm_srli_si128::<8>(b)),
        ]
    };
    let hi = |q: __m128i| _mm_and_si128(_mm_srli_epi16::<4>(q), low);
    (
        widen(_mm_and_si128(qa, low), _mm_and_si128(qb, low)),
        widen(hi(qa), hi(qb)),
    )
}

/// [`super::scalar::q4_k_f32`] for up to eight vectors (`sums`: each one's block sums of
/// 32): per 64 weights, the low and high nibbles widened to f32 in order, once for all the
/// vectors, and multiplied with the block of `x` they meet, scaled by `d·sc` of their
/// sub-block; the minimums are `dmin·m` times the block sums.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q4_k_f32_xn(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    let (xs, sums) = (x.xs, x.sums);
    by_count!(xs.len(), q4_k_f32_v(row, xs, sums, out))
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_k_f32_v<const N: usize>(row: &[u8], xs: &[&[f32]], sums: &[&[f32]], out: &mut [f32]) {
    let (blocks, _) = row.as_chunks::<{ quant::Q4_K_BYTES }>();
    let nb = blocks.len();
    let xs = checked::<N>(xs, nb * 8);
    assert!(
        sums.len() == N && sums.iter().all(|s| s.len() >= nb * 8),
        "block sums"
    );
    let mut acc = [_mm256_setzero_ps(); N];
    let mut mins = [0f32; N];
    for (i, b) in blocks.iter().enumerate() {
        let (d, dmin) = (half(b[0], b[1]), half(b[2], b[3]));
        let scales = &b[4..16];
        for k in 0..4 {
            let (wl, wh) = q4_k_widen(b, k);
            let (s1, m1) = quant::scale_min_k4(2 * k, scales);
            let (s2, m2) = quant::scale_min_k4(2 * k + 1, scales);
            let (d1, d2) = (_mm256_set1_ps(d * s1 as f32), _mm256_set1_ps(d * s2 as f32));
            let blk = (i * 256 + 64 * k) / 32;
            for v in 0..N {
                // SAFETY: (blk + 2)·32 ≤ nb·256 ≤ xs[v].len(), checked by `checked`.
                let (x1, x2) =
                    unsafe { (load_block_at(xs[v], blk), load_block_at(xs[v], blk + 1)) };
                acc[v] = _mm256_fmadd_ps(d1, dot_block(&wl, &x1), acc[v]);
                acc[v] = _mm256_fmadd_ps(d2, dot_block(&wh, &x2), acc[v]);
                let s = sums[v];
                mins[v] +=
                    dmin * m1 as f32 * s[i * 8 + 2 * k] + dmin * m2 as f32 * s[i * 8 + 2 * k + 1];
            }
        }
    }
    for (v, o) in out[..N].iter_mut().enumerate() {
        *o = hsum(acc[v]) - mins[v];
    }
}

/// [`super::scalar::q4_1_f32`] for up to eight vectors: each block is decoded once and
/// multiplied into every vector, with [`q4_1_f32`]'s arithmetic in its order (so a
/// vector's result does not depend on the batch it came in); the eight `m·s` terms of a
/// block are one vector multiply and add, lane by lane what [`q4_1_f32`] does in scalar.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q4_1_f32_xn(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    by_count!(x.len(), q4_1_f32_v(row, x, out))
}

/// [`q4_1_f32_xn`] for exactly `N` vectors.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_1_f32_v<const N: usize>(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let nb = blocks.len();
    let xs = checked::<N>(x.xs, nb);
    assert!(x.by_block.len() >= nb, "block sums shorter than the row");
    let mut acc = [_mm256_setzero_ps(); N];
    let mut mins = _mm256_setzero_ps();
    for (b, (raw, s)) in blocks.iter().zip(x.by_block).enumerate() {
        let d = _mm256_set1_ps(half(raw[0], raw[1]));
        let m = _mm256_set1_ps(half(raw[2], raw[3]));
        let w = q4_1_widen(raw);
        for v in 0..N {
            // SAFETY: b·32 + 32 ≤ nb·32 ≤ xs[v].len(), checked by `checked`.
            let xv = unsafe { load_block_at(xs[v], b) };
            acc[v] = _mm256_fmadd_ps(d, dot_block(&w, &xv), acc[v]);
        }
        // SAFETY: `s` is eight readable floats; loadu has no alignment requirement.
        let s = unsafe { _mm256_loadu_ps(s.as_ptr()) };
        mins = _mm256_add_ps(mins, _mm256_mul_ps(m, s));
    }
    let mut m = [0f32; MAX_VECTORS];
    // SAFETY: `m` is eight writable floats.
    unsafe { _mm256_storeu_ps(m.as_mut_ptr(), mins) };
    for (v, o) in out[..N].iter_mut().enumerate() {
        *o = hsum(acc[v]) + m[v];
    }
}

/// The first `N` vectors of `xs`, each checked to hold `nb` blocks.
#[inline]
fn checked<'a, const N: usize>(xs: &[&'a [f32]], nb: usize) -> [&'a [f32]; N] {
    assert_eq!(xs.len(), N, "vector count");
    std::array::from_fn(|v| {
        assert!(xs[v].len() >= nb * 32, "activations shorter than the row");
        xs[v]
    })
}

/// [`super::scalar::q8_0_f32`] for up to eight vectors, as [`q4_1_f32_xn`].
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8_0_f32_xn(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    by_count!(x.len(), q8_0_f32_v(row, x, out))
}

/// [`q8_0_f32_xn`] for exactly `N` vectors.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q8_0_f32_v<const N: usize>(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let xs = checked::<N>(x.xs, blocks.len());
    let mut acc = [_mm256_setzero_ps(); N];
    for (b, raw) in blocks.iter().enumerate() {
        let d = _mm256_set1_ps(half(raw[0], raw[1]));
        let w = q8_0_widen(raw);
        for v in 0..N {
            // SAFETY: b·32 + 32 ≤ nb·32 ≤ xs[v].len(), checked by `checked`.
            let xv = unsafe { load_block_at(xs[v], b) };
            acc[v] = _mm256_fmadd_ps(d, dot_block(&w, &xv), acc[v]);
        }
    }
    for (v, o) in out[..N].iter_mut().enumerate() {
        *o = hsum(acc[v]);
    }
}

/// [`super::scalar::q8_0_f32`].
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8_0_f32(row: &[u8], x: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let xb = blocks_of(x, blocks.len());
    let mut acc = _mm256_setzero_ps();
    for (raw, xb) in blocks.iter().zip(xb) {
        let d = _mm256_set1_ps(half(raw[0], raw[1]));
        acc = _mm256_fmadd_ps(d, dot_block(&q8_0_widen(raw), &load_block(xb)), acc);
    }
    hsum(acc)
}

/// Σ q·c over a Q4_1 block's 32 codes (0..=15) and 32 activation codes, as eight i32
/// partial sums converted to f32 (`maddubs` then `madd`, the integer path).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_1_idot(raw: &[u8], c: __m256i) -> __m256 {
    let low = _mm_set1_epi8(0x0F);
    let qs = load16(raw, 4);
    let lo = _mm_and_si128(qs, low);
    let hi = _mm_and_si128(_mm_srli_epi16::<4>(qs), low);
    let w = _mm256_set_m128i(hi, lo); // weights 0..32 in order
    let p = _mm256_madd_epi16(_mm256_maddubs_epi16(w, c), _mm256_set1_epi16(1));
    _mm256_cvtepi32_ps(p)
}

/// [`q4_1_idot`] for a Q8_0 block's signed codes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q8_0_idot(raw: &[u8], c: __m256i) -> __m256 {
    let w = load32(raw, 2);
    // maddubs takes one unsigned operand: |w| against c with w's sign moved onto it.
    // |−128| wraps to 128 as u8, still right; c is never −128.
    let aw = _mm256_sign_epi8(w, w);
    let sc = _mm256_sign_epi8(c, w);
    let p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sc), _mm256_set1_epi16(1));
    _mm256_cvtepi32_ps(p)
}

/// [`super::scalar::q4_1_q8`].
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q4_1_q8(row: &[u8], xq: &[Q8Block]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let mut acc = _mm256_setzero_ps();
    let mut mins = 0f32;
    for (raw, y) in blocks.iter().zip(xq) {
        let scale = _mm256_set1_ps(half(raw[0], raw[1]) * y.d);
        acc = _mm256_fmadd_ps(scale, q4_1_idot(raw, codes(y)), acc);
        mins += half(raw[2], raw[3]) * y.s;
    }
    hsum(acc) + mins
}

/// [`super::scalar::q8_0_q8`].
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8_0_q8(row: &[u8], xq: &[Q8Block]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let mut acc = _mm256_setzero_ps();
    for (raw, y) in blocks.iter().zip(xq) {
        let scale = _mm256_set1_ps(half(raw[0], raw[1]) * y.d);
        acc = _mm256_fmadd_ps(scale, q8_0_idot(raw, codes(y)), acc);
    }
    hsum(acc)
}

/// [`q4_1_q8`] for up to eight vectors: each block's codes are unpacked once for all of
/// them. Each result is exactly what [`q4_1_q8`] gives (same operations, same order).
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q4_1_q8_xn(row: &[u8], xq: &[&[Q8Block]], out: &mut [f32]) {
    by_count!(xq.len(), q4_1_q8_v(row, xq, out))
}

/// The first `N` 8-bit vectors, each checked to hold `nb` blocks.
#[inline]
fn checked_q8<'a, const N: usize>(xq: &[&'a [Q8Block]], nb: usize) -> [&'a [Q8Block]; N] {
    assert_eq!(xq.len(), N, "vector count");
    std::array::from_fn(|v| &xq[v][..nb])
}

/// [`q4_1_q8_xn`] for exactly `N` vectors.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q4_1_q8_v<const N: usize>(row: &[u8], xq: &[&[Q8Block]], out: &mut [f32]) {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let ys = checked_q8::<N>(xq, blocks.len());
    let low = _mm_set1_epi8(0x0F);
    let ones = _mm256_set1_epi16(1);
    let mut acc = [_mm256_setzero_ps(); N];
    let mut mins = [0f32; N];
    for (b, raw) in blocks.iter().enumerate() {
        let (d, m) = (half(raw[0], raw[1]), half(raw[2], raw[3]));
        let qs = load16(raw, 4);
        let lo = _mm_and_si128(qs, low);
        let hi = _mm_and_si128(_mm_srli_epi16::<4>(qs), low);
        let w = _mm256_set_m128i(hi, lo); // weights 0..32 in order
        for v in 0..N {
            let y = &ys[v][b];
            let p = _mm256_madd_epi16(_mm256_maddubs_epi16(w, codes(y)), ones);
            let scale = _mm256_set1_ps(d * y.d);
            acc[v] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(p), acc[v]);
            mins[v] += m * y.s;
        }
    }
    for (v, o) in out[..N].iter_mut().enumerate() {
        *o = hsum(acc[v]) + mins[v];
    }
}

/// [`q8_0_q8`] for up to eight vectors (each result as [`q8_0_q8`] gives it).
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8_0_q8_xn(row: &[u8], xq: &[&[Q8Block]], out: &mut [f32]) {
    by_count!(xq.len(), q8_0_q8_v(row, xq, out))
}

/// [`q8_0_q8_xn`] for exactly `N` vectors.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q8_0_q8_v<const N: usize>(row: &[u8], xq: &[&[Q8Block]], out: &mut [f32]) {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let ys = checked_q8::<N>(xq, blocks.len());
    let ones = _mm256_set1_epi16(1);
    let mut acc = [_mm256_setzero_ps(); N];
    for (b, raw) in blocks.iter().enumerate() {
        let d = half(raw[0], raw[1]);
        let w = load32(raw, 2);
        // As in `q8_0_idot`: |w| against the activations with w's sign moved onto them.
        let aw = _mm256_sign_epi8(w, w);
        for v in 0..N {
            let y = &ys[v][b];
            let sc = _mm256_sign_epi8(codes(y), w);
            let p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sc), ones);
            let scale = _mm256_set1_ps(d * y.d);
            acc[v] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(p), acc[v]);
        }
    }
    for (v, o) in out[..N].iter_mut().enumerate() {
        *o = hsum(acc[v]);
    }
}

/// Asks for the cache lines of the four rows that follow `rows` (the next call's rows,
/// which lie right after them in the matrix), a share per block: four rows read side by
/// side are four interleaved streams, which the hardware prefetcher follows badly.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn prefetch_next(rows: &[&[u8]; 4], block: usize, b: usize) {
    let span = rows[0].len() * 4;
    let at = rows[0].as_ptr().wrapping_add(span + b * 4 * block);
    // Prefetching is a hint: an address past the matrix is never dereferenced.
    _mm_prefetch::<_MM_HINT_T0>(at.cast());
    _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(64).cast());
    if block * 4 > 128 {
        _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(128).cast());
    }
}

/// The f16 pairs at the start of four blocks as eight floats `[d0, m0, d1, m1, …, m3]`
/// by one conversion: `d, m` of Q4_1, or with `second` false `d, 0` (Q8_0, whose next
/// two bytes are codes).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn head_pairs<const N: usize>(raws: [&[u8; N]; 4], second: bool) -> __m256 {
    let keep = if second { -1 } else { 0xFFFF };
    let w = raws.map(|r| i32::from_le_bytes([r[0], r[1], r[2], r[3]]) & keep);
    _mm256_cvtph_ps(_mm_setr_epi32(w[0], w[1], w[2], w[3]))
}

/// Lane `i` of `v` in all eight lanes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn lane(v: __m256, i: i32) -> __m256 {
    _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(i))
}

/// `[a, b, a, b, a, b, a, b]`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn pairs(a: f32, b: f32) -> __m256 {
    let bits = a.to_bits() as u64 | (b.to_bits() as u64) << 32;
    _mm256_castpd_ps(_mm256_set1_pd(f64::from_bits(bits)))
}

/// The blocks of four rows of the same length, each row a whole number of `N`-byte
/// blocks; returns the rows as blocks and their count.
fn four_rows<const N: usize>(rows: [&[u8]; 4]) -> ([&[[u8; N]]; 4], usize) {
    let nb = rows[0].len() / N;
    let blocks = rows.map(|r| {
        let (b, rest) = r.as_chunks::<N>();
        assert!(
            b.len() == nb && rest.is_empty(),
            "rows of different lengths"
        );
        b
    });
    (blocks, nb)
}

/// [`q4_1_q8`] for four rows against one vector: the vector's codes are loaded once per
/// block and the four rows' chains run side by side. Each result is exactly what
/// [`q4_1_q8`] gives for its row (same operations, same order).
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q4_1_q8_r4(rows: [&[u8]; 4], xq: &[Q8Block]) -> [f32; 4] {
    let (blocks, nb) = four_rows::<{ BlockQ4_1::BYTES }>(rows);
    let xq = &xq[..nb];
    let mut acc = [_mm256_setzero_ps(); 4];
    // Odd lanes: the four rows' Σ m·s; even lanes unused.
    let mut mins = _mm256_setzero_ps();
    for (b, y) in xq.iter().enumerate() {
        prefetch_next(&rows, BlockQ4_1::BYTES, b);
        let c = codes(y);
        // [d0·y.d, m0·y.s, d1·y.d, m1·y.s, …]: each lane the product the one-row kernel
        // forms in a scalar register.
        let scaled = _mm256_mul_ps(head_pairs(blocks.map(|r| &r[b]), true), pairs(y.d, y.s));
        mins = _mm256_add_ps(mins, scaled);
        for i in 0..4 {
            let scale = lane(scaled, 2 * i as i32);
            acc[i] = _mm256_fmadd_ps(scale, q4_1_idot(&blocks[i][b], c), acc[i]);
        }
    }
    let mut m = [0f32; 8];
    // SAFETY: `m` is 8 writable floats; storeu has no alignment requirement.
    unsafe { _mm256_storeu_ps(m.as_mut_ptr(), mins) };
    std::array::from_fn(|i| hsum(acc[i]) + m[2 * i + 1])
}

/// [`q8_0_q8`] for four rows against one vector (each result as [`q8_0_q8`] gives it).
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8_0_q8_r4(rows: [&[u8]; 4], xq: &[Q8Block]) -> [f32; 4] {
    let (blocks, nb) = four_rows::<{ BlockQ8_0::BYTES }>(rows);
    let xq = &xq[..nb];
    let mut acc = [_mm256_setzero_ps(); 4];
    for (b, y) in xq.iter().enumerate() {
        prefetch_next(&rows, BlockQ8_0::BYTES, b);
        let c = codes(y);
        // [d0·y.d, 0, d1·y.d, 0, …].
        let scaled = _mm256_mul_ps(
            head_pairs(blocks.map(|r| &r[b]), false),
            _mm256_set1_ps(y.d),
        );
        for i in 0..4 {
            let scale = lane(scaled, 2 * i as i32);
            acc[i] = _mm256_fmadd_ps(scale, q8_0_idot(&blocks[i][b], c), acc[i]);
        }
    }
    std::array::from_fn(|i| hsum(acc[i]))
}

/// [`q4_1_f32`] for four rows against one vector: each block of `x` is loaded once for
/// the four rows. Each result is exactly what [`q4_1_f32`] gives for its row.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q4_1_f32_r4(rows: [&[u8]; 4], x: &[f32], xsum: &[f32]) -> [f32; 4] {
    let (blocks, nb) = four_rows::<{ BlockQ4_1::BYTES }>(rows);
    let xb = blocks_of(x, nb);
    let xsum = &xsum[..nb];
    let mut acc = [_mm256_setzero_ps(); 4];
    // Odd lanes: the four rows' Σ m·s; even lanes unused.
    let mut mins = _mm256_setzero_ps();
    for (b, (xb, &s)) in xb.iter().zip(xsum).enumerate() {
        prefetch_next(&rows, BlockQ4_1::BYTES, b);
        let xv = load_block(xb);
        let dm = head_pairs(blocks.map(|r| &r[b]), true);
        mins = _mm256_add_ps(mins, _mm256_mul_ps(dm, _mm256_set1_ps(s)));
        for i in 0..4 {
            let d = lane(dm, 2 * i as i32);
            acc[i] = _mm256_fmadd_ps(d, dot_block(&q4_1_widen(&blocks[i][b]), &xv), acc[i]);
        }
    }
    let mut m = [0f32; 8];
    // SAFETY: `m` is 8 writable floats; storeu has no alignment requirement.
    unsafe { _mm256_storeu_ps(m.as_mut_ptr(), mins) };
    std::array::from_fn(|i| hsum(acc[i]) + m[2 * i + 1])
}

/// [`q8_0_f32`] for four rows against one vector (each result as [`q8_0_f32`] gives it).
#[target_feature(enable = "avx2,fma,f16c")]
pub fn q8_0_f32_r4(rows: [&[u8]; 4], x: &[f32]) -> [f32; 4] {
    let (blocks, nb) = four_rows::<{ BlockQ8_0::BYTES }>(rows);
    let xb = blocks_of(x, nb);
    let mut acc = [_mm256_setzero_ps(); 4];
    for (b, xb) in xb.iter().enumerate() {
        prefetch_next(&rows, BlockQ8_0::BYTES, b);
        let xv = load_block(xb);
        let ds = head_pairs(blocks.map(|r| &r[b]), false);
        for i in 0..4 {
            let d = lane(ds, 2 * i as i32);
            acc[i] = _mm256_fmadd_ps(d, dot_block(&q8_0_widen(&blocks[i][b]), &xv), acc[i]);
        }
    }
    std::array::from_fn(|i| hsum(acc[i]))
}

/// `GgmlType::dequantize` compiled with AVX2, FMA and F16C: `quant`'s dequantizers (all
/// `#[inline]`) are inlined here and vectorized with the wider registers; the arithmetic
/// is the same, so are the floats.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn decode_row(ty: quant::GgmlType, data: &[u8], out: &mut [f32]) {
    use quant::GgmlType as T;
    match ty {
        T::F32 => quant::dequantize_f32(data, out),
        T::F16 => quant::dequantize_f16(data, out),
        T::Bf16 => quant::dequantize_bf16(data, out),
        T::Q4_0 => quant::dequantize_q4_0(data, out),
        T::Q4_1 => quant::dequantize_q4_1(data, out),
        T::Q5_0 => quant::dequantize_q5_0(data, out),
        T::Q5_1 => quant::dequantize_q5_1(data, out),
        T::Q8_0 => quant::dequantize_q8_0(data, out),
        T::Q2K => quant::dequantize_q2_k(data, out),
        T::Q3K => quant::dequantize_q3_k(data, out),
        T::Q4K => quant::dequantize_q4_k(data, out),
        T::Q5K => quant::dequantize_q5_k(data, out),
        T::Q6K => quant::dequantize_q6_k(data, out),
    }
}

/// [`super::scalar::f32_dot`].
#[target_feature(enable = "avx2,fma,f16c")]
pub fn f32_dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (mut s0, mut s1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    let mut i = 0;
    while i + 16 <= n {
        s0 = _mm256_fmadd_ps(load8(a, i), load8(b, i), s0);
        s1 = _mm256_fmadd_ps(load8(a, i + 8), load8(b, i + 8), s1);
        i += 16;
    }
    if i + 8 <= n {
        s0 = _mm256_fmadd_ps(load8(a, i), load8(b, i), s0);
        i += 8;
    }
    let tail: f32 = a[i..n].iter().zip(&b[i..n]).map(|(x, y)| x * y).sum();
    hsum(_mm256_add_ps(s0, s1)) + tail
}
