//! aarch64 kernels with NEON (part of every aarch64 processor, so no detection is needed):
//! Apple silicon, Graviton, Ampere, the Raspberry Pi 4 and later.
//!
//! Same sums as `scalar.rs`, four lanes at a time: f32 activations multiply weights
//! widened to f32 with fused multiply-adds; 8-bit activations multiply as i8 × i8 → i16
//! (`vmull_s8`) and add pairwise into i32 lanes, so each block's integer sum is exact and
//! the 8-bit kernels give exactly the scalar reference's result. Every function carries
//! `#[target_feature(enable = "neon")]`, so its intrinsics are safe to call; the table in
//! `mod.rs` calls the kernels where the target has NEON.

use super::q8::Q8Block;
use quant::{BlockQ4_1, BlockQ8_0, f16_to_f32};
use std::arch::aarch64::*;

#[inline]
#[target_feature(enable = "neon")]
fn half(lo: u8, hi: u8) -> f32 {
    f16_to_f32(u16::from_le_bytes([lo, hi]))
}

/// Four floats from `x[at..at + 4]` (bounds checked).
#[inline]
#[target_feature(enable = "neon")]
fn load4(x: &[f32], at: usize) -> float32x4_t {
    let c: &[f32; 4] = x[at..at + 4].try_into().expect("4 floats");
    // SAFETY: `c` is four readable floats; vld1q has no alignment requirement.
    unsafe { vld1q_f32(c.as_ptr()) }
}

/// 16 bytes from `b[at..at + 16]` (bounds checked).
#[inline]
#[target_feature(enable = "neon")]
fn load16(b: &[u8], at: usize) -> uint8x16_t {
    let c: &[u8; 16] = b[at..at + 16].try_into().expect("16 bytes");
    // SAFETY: `c` is 16 readable bytes.
    unsafe { vld1q_u8(c.as_ptr()) }
}

/// The 32 codes of a Q8 activation block, as two vectors.
#[inline]
#[target_feature(enable = "neon")]
fn codes(y: &Q8Block) -> (int8x16_t, int8x16_t) {
    // SAFETY: `qs` is 32 readable bytes.
    unsafe { (vld1q_s8(y.qs.as_ptr()), vld1q_s8(y.qs.as_ptr().add(16))) }
}

/// `acc + Σ w·x` over 16 weights (as i16 lanes: `lo` weights 0..8, `hi` 8..16) and
/// `x[at..at + 16]`.
#[inline]
#[target_feature(enable = "neon")]
fn fma16(acc: float32x4_t, lo: int16x8_t, hi: int16x8_t, x: &[f32], at: usize) -> float32x4_t {
    let acc = vfmaq_f32(
        acc,
        vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))),
        load4(x, at),
    );
    let acc = vfmaq_f32(acc, vcvtq_f32_s32(vmovl_high_s16(lo)), load4(x, at + 4));
    let acc = vfmaq_f32(
        acc,
        vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))),
        load4(x, at + 8),
    );
    vfmaq_f32(acc, vcvtq_f32_s32(vmovl_high_s16(hi)), load4(x, at + 12))
}

/// Unsigned codes (0..=15) widened to i16 lanes: bytes 0..8 and 8..16.
#[inline]
#[target_feature(enable = "neon")]
fn widen_u8(v: uint8x16_t) -> (int16x8_t, int16x8_t) {
    (
        vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v))),
        vreinterpretq_s16_u16(vmovl_high_u8(v)),
    )
}

/// Signed codes widened to i16 lanes: bytes 0..8 and 8..16.
#[inline]
#[target_feature(enable = "neon")]
fn widen_s8(v: int8x16_t) -> (int16x8_t, int16x8_t) {
    (vmovl_s8(vget_low_s8(v)), vmovl_high_s8(v))
}

/// [`super::scalar::q4_1_f32`].
#[target_feature(enable = "neon")]
pub fn q4_1_f32(row: &[u8], x: &[f32], xsum: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let low = vdupq_n_u8(0x0F);
    let mut acc = vdupq_n_f32(0.0);
    let mut mins = 0f32;
    for (b, (raw, &s)) in blocks.iter().zip(xsum).enumerate() {
        let qs = load16(raw, 4);
        let (l0, l1) = widen_u8(vandq_u8(qs, low)); // weights 0..16
        let (h0, h1) = widen_u8(vshrq_n_u8::<4>(qs)); // weights 16..32
        let mut blk = vdupq_n_f32(0.0);
        blk = fma16(blk, l0, l1, x, b * 32);
        blk = fma16(blk, h0, h1, x, b * 32 + 16);
        acc = vfmaq_f32(acc, vdupq_n_f32(half(raw[0], raw[1])), blk);
        mins += half(raw[2], raw[3]) * s;
    }
    vaddvq_f32(acc) + mins
}

/// [`super::scalar::q8_0_f32`].
#[target_feature(enable = "neon")]
pub fn q8_0_f32(row: &[u8], x: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let mut acc = vdupq_n_f32(0.0);
    for (b, raw) in blocks.iter().enumerate() {
        let q0 = vreinterpretq_s8_u8(load16(raw, 2));
        let q1 = vreinterpretq_s8_u8(load16(raw, 18));
        let (a0, a1) = widen_s8(q0);
        let (b0, b1) = widen_s8(q1);
        let mut blk = vdupq_n_f32(0.0);
        blk = fma16(blk, a0, a1, x, b * 32);
        blk = fma16(blk, b0, b1, x, b * 32 + 16);
        acc = vfmaq_f32(acc, vdupq_n_f32(half(raw[0], raw[1])), blk);
    }
    vaddvq_f32(acc)
}

/// `Σ w·y` over 32 code pairs (`w0, w1`: weights 0..16, 16..32), exact in i32.
#[inline]
#[target_feature(enable = "neon")]
fn idot32(w0: int8x16_t, w1: int8x16_t, y0: int8x16_t, y1: int8x16_t) -> i32 {
    let s = vpaddlq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(y0)));
    let s = vpadalq_s16(s, vmull_high_s8(w0, y0));
    let s = vpadalq_s16(s, vmull_s8(vget_low_s8(w1), vget_low_s8(y1)));
    let s = vpadalq_s16(s, vmull_high_s8(w1, y1));
    vaddvq_s32(s)
}

/// [`super::scalar::q4_1_q8`] (the same result: the integer sums are exact and the scalar
/// steps are the reference's).
#[target_feature(enable = "neon")]
pub fn q4_1_q8(row: &[u8], xq: &[Q8Block]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let low = vdupq_n_u8(0x0F);
    let mut total = 0f32;
    for (raw, y) in blocks.iter().zip(xq) {
        let qs = load16(raw, 4);
        let w0 = vreinterpretq_s8_u8(vandq_u8(qs, low));
        let w1 = vreinterpretq_s8_u8(vshrq_n_u8::<4>(qs));
        let (y0, y1) = codes(y);
        let isum = idot32(w0, w1, y0, y1);
        let (d, m) = (half(raw[0], raw[1]), half(raw[2], raw[3]));
        total += d * y.d * isum as f32 + m * y.s;
    }
    total
}

/// [`super::scalar::q8_0_q8`] (the same result, as [`q4_1_q8`]).
#[target_feature(enable = "neon")]
pub fn q8_0_q8(row: &[u8], xq: &[Q8Block]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let mut total = 0f32;
    for (raw, y) in blocks.iter().zip(xq) {
        let w0 = vreinterpretq_s8_u8(load16(raw, 2));
        let w1 = vreinterpretq_s8_u8(load16(raw, 18));
        let (y0, y1) = codes(y);
        let isum = idot32(w0, w1, y0, y1);
        total += half(raw[0], raw[1]) * y.d * isum as f32;
    }
    total
}

/// [`super::scalar::f32_dot`].
#[target_feature(enable = "neon")]
pub fn f32_dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let mut acc = vdupq_n_f32(0.0);
    let mut i = 0;
    while i + 4 <= n {
        acc = vfmaq_f32(acc, load4(a, i), load4(b, i));
        i += 4;
    }
    let tail: f32 = a[i..n].iter().zip(&b[i..n]).map(|(x, y)| x * y).sum();
    vaddvq_f32(acc) + tail
}
