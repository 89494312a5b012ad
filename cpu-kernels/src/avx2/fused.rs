//! Fused decode-and-dot kernels for the block types without kernels of their own (F16,
//! BF16, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K, Q6_K): each group of 32 weights is widened to f32
//! in registers and multiplied into up to eight activation vectors, so a row is never
//! written out as floats.
//!
//! Every type describes one group of 32 weights as a [`Group`]: codes `q` (small integers,
//! or the weights themselves for F16/BF16) with a scale `d` and an offset `m` per half of
//! 16, `w_j = d·q_j + m` — the dequantizer's `d` and `m` in f32, computed as it computes
//! them. One generic driver ([`xn`]) takes the dot products: per group and vector
//! `d·Σ q·x` (one scale, or one per half), plus `m·Σ x` accumulated in a second register
//! where the type has offsets. Each vector's sums are its own, so a result does not depend
//! on the other vectors of the call. The sums differ from "decode the row, then dot" only
//! in the order of f32 additions (`kernels/tests.rs` checks both against f64).

use super::{MAX_VECTORS, Vectors, checked, dot_block, half, hsum, load_block_at, load16, load32};
use std::arch::x86_64::*;

/// 32 weights of a block, ready to multiply: `w_j = d[h]·q_j + m[h]` for half `h = j / 16`.
pub struct Group {
    /// The codes as f32, in weight order, eight to a register.
    q: [__m256; 4],
    /// The scale of each half (both the same where the type has one per 32).
    d: [f32; 2],
    /// The offset of each half (unused where the type has none).
    m: [f32; 2],
}

/// A block type with a fused kernel: how its blocks split into groups of 32 weights.
pub trait Fused {
    /// Bytes per block.
    const BYTES: usize;
    /// Groups of 32 weights per block.
    const GROUPS: usize;
    /// Whether the two halves of a group have their own scale and offset.
    const HALVES: bool;
    /// Whether weights have an offset `m` (a minimum).
    const OFFSET: bool;
    /// Whether `q` holds the weights themselves (`d` is 1, no multiply).
    const PLAIN: bool = false;

    /// Group `g` of block `b`.
    ///
    /// # Safety
    /// The processor has AVX2, FMA and F16C; `b` holds [`Fused::BYTES`] bytes.
    unsafe fn group(b: &[u8], g: usize) -> Group;
}

/// 32 unsigned bytes as f32, in order.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn u8x32_f32(v: __m256i) -> [__m256; 4] {
    let (lo, hi) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let w = |v: __m128i| _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
    [
        w(lo),
        w(_mm_srli_si128::<8>(lo)),
        w(hi),
        w(_mm_srli_si128::<8>(hi)),
    ]
}

/// 32 signed bytes as f32, in order.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn i8x32_f32(v: __m256i) -> [__m256; 4] {
    let (lo, hi) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let w = |v: __m128i| _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
    [
        w(lo),
        w(_mm_srli_si128::<8>(lo)),
        w(hi),
        w(_mm_srli_si128::<8>(hi)),
    ]
}

/// Byte `j` is `0xFF` where bit `j` of `bits` is set, else 0.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn spread_bits(bits: u32) -> __m256i {
    // Byte j of `spread` holds byte j / 8 of `bits`; the mask picks bit j % 8 of it.
    let spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(bits as i32),
        _mm256_setr_epi8(
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3,
            3, 3, 3,
        ),
    );
    let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit)
}

/// Byte `l` is `0xFF` where bit `bit` (0..8) of `v`'s byte `l` is set, else 0.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn bit_of_bytes(v: __m256i, bit: usize) -> __m256i {
    let m = _mm256_set1_epi8((1u8 << bit) as i8);
    _mm256_cmpeq_epi8(_mm256_and_si256(v, m), m)
}

/// Bits `shift .. shift + width` of each of `v`'s bytes (`shift + width ≤ 8`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn bits_of_bytes(v: __m256i, shift: usize, width: u32) -> __m256i {
    // 16-bit lanes shift bits of the high byte into the low one only above bit 8 − shift,
    // which the mask drops.
    let s = _mm256_srl_epi16(v, _mm_cvtsi32_si128(shift as i32));
    _mm256_and_si256(s, _mm256_set1_epi8(((1u32 << width) - 1) as i8))
}

/// The 32 five-bit codes (0..=31) of a Q5_0/Q5_1 block whose `qh` is at `b[at..at + 4]`
/// and nibbles at `b[at + 4..at + 20]`: nibble byte `j` holds weights `j` (low) and
/// `j + 16` (high); bit `j` of `qh` is weight `j`'s fifth bit.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn q5_codes(b: &[u8], at: usize) -> __m256i {
    let qh = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let fifth = _mm256_and_si256(spread_bits(qh), _mm256_set1_epi8(0x10));
    let low = _mm_set1_epi8(0x0F);
    let qs = load16(b, at + 4);
    let nibbles = _mm256_set_m128i(
        _mm_and_si128(_mm_srli_epi16::<4>(qs), low),
        _mm_and_si128(qs, low),
    );
    _mm256_or_si256(nibbles, fifth)
}

/// A scale for both halves.
fn both(d: f32) -> [f32; 2] {
    [d, d]
}

/// ggml's F16 rows, in groups of 32 (rows of whole groups only).
pub struct F16;

impl Fused for F16 {
    const BYTES: usize = 64;
    const GROUPS: usize = 1;
    const HALVES: bool = false;
    const OFFSET: bool = false;
    const PLAIN: bool = true;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group(b: &[u8], _: usize) -> Group {
        Group {
            q: std::array::from_fn(|i| _mm256_cvtph_ps(load16(b, 16 * i))),
            d: [1.0; 2],
            m: [0.0; 2],
        }
    }
}

/// bfloat16 rows, in groups of 32 (each value the top half of an f32).
pub struct Bf16;

impl Fused for Bf16 {
    const BYTES: usize = 64;
    const GROUPS: usize = 1;
    const HALVES: bool = false;
    const OFFSET: bool = false;
    const PLAIN: bool = true;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group(b: &[u8], _: usize) -> Group {
        let w = |i: usize| {
            let wide = _mm256_cvtepu16_epi32(load16(b, 16 * i));
            _mm256_castsi256_ps(_mm256_slli_epi32::<16>(wide))
        };
        Group {
            q: [w(0), w(1), w(2), w(3)],
            d: [1.0; 2],
            m: [0.0; 2],
        }
    }
}

/// Q5_0: `w = d·(q − 16)`.
pub struct Q5_0;

impl Fused for Q5_0 {
    const BYTES: usize = quant::Q5_0_BYTES;
    const GROUPS: usize = 1;
    const HALVES: bool = false;
    const OFFSET: bool = false;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group(b: &[u8], _: usize) -> Group {
        let q = _mm256_sub_epi8(q5_codes(b, 2), _mm256_set1_epi8(16));
        Group {
            q: i8x32_f32(q),
            d: both(half(b[0], b[1])),
            m: [0.0; 2],
        }
    }
}

/// Q5_1: `w = d·q + m`.
pub struct Q5_1;

impl Fused for Q5_1 {
    const BYTES: usize = quant::Q5_1_BYTES;
    const GROUPS: usize = 1;
    const HALVES: bool = false;
    const OFFSET: bool = true;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group(b: &[u8], _: usize) -> Group {
        Group {
            q: u8x32_f32(q5_codes(b, 4)),
            d: both(half(b[0], b[1])),
            m: both(half(b[2], b[3])),
        }
    }
}

/// Q2_K: group `g` is bits `2·(g % 4)` of the 32 code bytes `32·(g / 4)..`; each half has
/// a 4-bit scale and a 4-bit minimum: `w = d·sc·q − dmin·mn`.
pub struct Q2K;

impl Fused for Q2K {
    const BYTES: usize = quant::Q2_K_BYTES;
    const GROUPS: usize = 8;
    const HALVES: bool = true;
    const OFFSET: bool = true;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group(b: &[u8], g: usize) -> Group {
        let (d, dmin) = (half(b[80], b[81]), half(b[82], b[83]));
        let q = bits_of_bytes(load32(b, 16 + 32 * (g / 4)), 2 * (g % 4), 2);
        let (s0, s1) = (b[2 * g], b[2 * g + 1]);
        Group {
            q: u8x32_f32(q),
            d: [d * (s0 & 0x0F) as f32, d * (s1 & 0x0F) as f32],
            m: [-(dmin * (s0 >> 4) as f32), -(dmin * (s1 >> 4) as f32)],
        }
    }
}

/// Q3_K: as Q2_K's two bits, minus 4 where bit `g` of the weight's `hmask` byte is clear;
/// each half has a 6-bit scale (offset by 32): `w = d·(sc − 32)·q`.
pub struct Q3K;

impl Fused for Q3K {
    const BYTES: usize = quant::Q3_K_BYTES;
    const GROUPS: usize = 8;
    const HALVES: bool = true;
    const OFFSET: bool = false;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group(b: &[u8], g: usize) -> Group {
        let d = half(b[108], b[109]);
        let low = bits_of_bytes(load32(b, 32 + 32 * (g / 4)), 2 * (g % 4), 2);
        // 4 where the high bit is clear.
        let four = _mm256_andnot_si256(bit_of_bytes(load32(b, 0), g), _mm256_set1_epi8(4));
        let sc = |i: usize| d * (quant::q3_k_scale(&b[96..108], i) as i32 - 32) as f32;
        Group {
            q: i8x32_f32(_mm256_sub_epi8(low, four)),
            d: [sc(2 * g), sc(2 * g + 1)],
            m: [0.0; 2],
        }
    }
}

/// Q5_K: group `g` is the low (even `g`) or high nibbles of code bytes `32·(g / 2)..`, with
/// bit `g` of the `qh` bytes as the fifth bit; scale and minimum as Q4_K's:
/// `w = d·sc·q − dmin·mn`.
pub struct Q5K;

impl Fused for Q5K {
    const BYTES: usize = quant::Q5_K_BYTES;
    const GROUPS: usize = 8;
    const HALVES: bool = false;
    const OFFSET: bool = true;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group(b: &[u8], g: usize) -> Group {
        let (d, dmin) = (half(b[0], b[1]), half(b[2], b[3]));
        let nibbles = bits_of_bytes(load32(b, 48 + 32 * (g / 2)), 4 * (g % 2), 4);
        let fifth = _mm256_and_si256(bit_of_bytes(load32(b, 16), g), _mm256_set1_epi8(16));
        let (s, mn) = quant::scale_min_k4(g, &b[4..16]);
        Group {
            q: u8x32_f32(_mm256_or_si256(nibbles, fifth)),
            d: both(d * s as f32),
            m: both(-(dmin * mn as f32)),
        }
    }
}

/// Q6_K: in each half block of 128 weights (`n = g / 4`), group `j = g % 4` takes the low
/// (`j` = 0, 1) or high (2, 3) nibbles of code bytes `64n + 32·(j % 2)..`, with bits `2j`
/// of the `qh` bytes `128 + 32n..` as its top two bits, minus 32; each half group has a
/// signed 8-bit scale: `w = d·sc·(q − 32)`.
pub struct Q6K;

impl Fused for Q6K {
    const BYTES: usize = quant::Q6_K_BYTES;
    const GROUPS: usize = 8;
    const HALVES: bool = true;
    const OFFSET: bool = false;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group(b: &[u8], g: usize) -> Group {
        let (n, j) = (g / 4, g % 4);
        let d = half(b[208], b[209]);
        let low = bits_of_bytes(load32(b, 64 * n + 32 * (j % 2)), 4 * (j / 2), 4);
        let high = bits_of_bytes(load32(b, 128 + 32 * n), 2 * j, 2);
        let q = _mm256_or_si256(low, _mm256_slli_epi16::<4>(high));
        let sc = |i: usize| d * (b[192 + 8 * n + i] as i8) as f32;
        Group {
            q: i8x32_f32(_mm256_sub_epi8(q, _mm256_set1_epi8(32))),
            d: [sc(2 * j), sc(2 * j + 1)],
            m: [0.0; 2],
        }
    }
}

/// `out[v] = Σ_c W[c]·x.xs[v][c]` for one row of type `T` and up to eight vectors (with
/// their block sums of 32 where `T` has one offset per group).
///
/// # Safety
/// The processor has AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn xn<T: Fused>(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    // SAFETY: the caller's guarantee, passed on.
    unsafe { by_count!(x.len(), xn_v<T>(row, x, out)) }
}

/// [`xn`] for exactly `N` vectors.
///
/// # Safety
/// As [`xn`].
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn xn_v<T: Fused, const N: usize>(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    let blocks = row.chunks_exact(T::BYTES);
    let nb = blocks.len() * T::GROUPS;
    let xs = checked::<N>(x.xs, nb);
    let sums: [&[f32]; N] = std::array::from_fn(|v| {
        if T::OFFSET && !T::HALVES {
            &x.sums[v][..nb]
        } else {
            &[]
        }
    });
    let mut acc = [_mm256_setzero_ps(); N];
    // Offsets: per half in registers, per group from the block sums.
    let mut off = [_mm256_setzero_ps(); N];
    let mut offs = [0f32; N];
    for (i, b) in blocks.enumerate() {
        for g in 0..T::GROUPS {
            // SAFETY: the caller's guarantee; `b` is one whole block.
            let w = unsafe { T::group(b, g) };
            let blk = i * T::GROUPS + g;
            for v in 0..N {
                // SAFETY: blk·32 + 32 ≤ blocks·GROUPS·32 ≤ xs[v].len(), by `checked`.
                let xb = unsafe { load_block_at(xs[v], blk) };
                if T::PLAIN {
                    acc[v] = _mm256_add_ps(acc[v], dot_block(&w.q, &xb));
                } else if T::HALVES {
                    let lo = _mm256_fmadd_ps(w.q[1], xb[1], _mm256_mul_ps(w.q[0], xb[0]));
                    let hi = _mm256_fmadd_ps(w.q[3], xb[3], _mm256_mul_ps(w.q[2], xb[2]));
                    acc[v] = _mm256_fmadd_ps(_mm256_set1_ps(w.d[0]), lo, acc[v]);
                    acc[v] = _mm256_fmadd_ps(_mm256_set1_ps(w.d[1]), hi, acc[v]);
                } else {
                    acc[v] = _mm256_fmadd_ps(_mm256_set1_ps(w.d[0]), dot_block(&w.q, &xb), acc[v]);
                }
                if T::OFFSET && T::HALVES {
                    let (lo, hi) = (_mm256_add_ps(xb[0], xb[1]), _mm256_add_ps(xb[2], xb[3]));
                    off[v] = _mm256_fmadd_ps(_mm256_set1_ps(w.m[0]), lo, off[v]);
                    off[v] = _mm256_fmadd_ps(_mm256_set1_ps(w.m[1]), hi, off[v]);
                } else if T::OFFSET {
                    offs[v] += w.m[0] * sums[v][blk];
                }
            }
        }
    }
    for (v, o) in out[..N].iter_mut().enumerate() {
        *o = match (T::OFFSET, T::HALVES) {
            (true, true) => hsum(acc[v]) + hsum(off[v]),
            (true, false) => hsum(acc[v]) + offs[v],
            (false, _) => hsum(acc[v]),
        };
    }
}
