//! wasm32 kernels with `simd128` (every current browser), compiled in when the build
//! enables the feature (`.cargo/config.toml` does for the page).
//!
//! Same sums as `scalar.rs`, four lanes at a time: f32 activations multiply weights
//! widened to f32; 8-bit activations widen both sides to i16 and use `i32x4.dot_i16x8`.

use super::q8::Q8Block;
use super::{MAX_VECTORS, Vectors};
use quant::{BlockQ4_1, BlockQ8_0, f16_to_f32};
use std::arch::wasm32::*;

pub mod attention;

#[inline]
fn half(lo: u8, hi: u8) -> f32 {
    f16_to_f32(u16::from_le_bytes([lo, hi]))
}

#[inline]
fn hsum(v: v128) -> f32 {
    f32x4_extract_lane::<0>(v)
        + f32x4_extract_lane::<1>(v)
        + f32x4_extract_lane::<2>(v)
        + f32x4_extract_lane::<3>(v)
}

/// Four floats from `x[at..at + 4]` (bounds checked).
#[inline]
fn load4(x: &[f32], at: usize) -> v128 {
    let c: &[f32; 4] = x[at..at + 4].try_into().expect("4 floats");
    // SAFETY: `c` is 16 readable bytes; v128_load has no alignment requirement.
    unsafe { v128_load(c.as_ptr().cast()) }
}

/// 16 bytes from `b[at..at + 16]` (bounds checked).
#[inline]
fn load16(b: &[u8], at: usize) -> v128 {
    let c: &[u8; 16] = b[at..at + 16].try_into().expect("16 bytes");
    // SAFETY: `c` is 16 readable bytes.
    unsafe { v128_load(c.as_ptr().cast()) }
}

/// Sixteen weights given as i16 lanes (`w_lo`: weights 0..8, `w_hi`: 8..16), widened to
/// four f32 vectors.
#[inline]
fn widen16(w_lo: v128, w_hi: v128) -> [v128; 4] {
    [
        f32x4_convert_i32x4(i32x4_extend_low_i16x8(w_lo)),
        f32x4_convert_i32x4(i32x4_extend_high_i16x8(w_lo)),
        f32x4_convert_i32x4(i32x4_extend_low_i16x8(w_hi)),
        f32x4_convert_i32x4(i32x4_extend_high_i16x8(w_hi)),
    ]
}

/// Where a block's sum starts: −0, which added to anything leaves it as it is, so the
/// compiler drops the add (from +0 it must keep it, +0 + −0 being +0). The sums across
/// blocks start from +0, so a block's −0 changes no result.
const ZERO: v128 = f32x4(-0.0, -0.0, -0.0, -0.0);

/// `acc + Σ w·x` over 16 widened weights and 16 floats, summed in one fixed order (every
/// kernel here adds in this order, so one vector or many give the same float).
#[inline]
fn fma16(acc: v128, w: &[v128; 4], x: &[f32; 16]) -> v128 {
    // SAFETY: `x` is 64 readable bytes; v128_load has no alignment requirement.
    let l = |i: usize| unsafe { v128_load(x.as_ptr().add(i).cast()) };
    let a = f32x4_add(f32x4_mul(w[0], l(0)), f32x4_mul(w[1], l(4)));
    let b = f32x4_add(f32x4_mul(w[2], l(8)), f32x4_mul(w[3], l(12)));
    f32x4_add(acc, f32x4_add(a, b))
}

/// `x[at..at + 32]` as two arrays of 16: one bounds check for the block.
#[inline]
fn block32(x: &[f32], at: usize) -> (&[f32; 16], &[f32; 16]) {
    halves(x[at..at + 32].try_into().expect("32 floats"))
}

/// A Q4_1 block's 32 weights widened to f32 (codes 0..16, before scale and minimum), and
/// its scale and minimum.
#[inline]
fn q4_1_block(raw: &[u8; BlockQ4_1::BYTES]) -> ([v128; 4], [v128; 4], f32, f32) {
    let qs = load16(raw, 4);
    let lo = v128_and(qs, u8x16_splat(0x0F));
    let hi = u8x16_shr(qs, 4);
    (
        widen16(u16x8_extend_low_u8x16(lo), u16x8_extend_high_u8x16(lo)),
        widen16(u16x8_extend_low_u8x16(hi), u16x8_extend_high_u8x16(hi)),
        half(raw[0], raw[1]),
        half(raw[2], raw[3]),
    )
}

/// A Q8_0 block's 32 weights widened to f32 (codes, before the scale), and its scale.
#[inline]
fn q8_0_block(raw: &[u8; BlockQ8_0::BYTES]) -> ([v128; 4], [v128; 4], f32) {
    let (q0, q1) = (load16(raw, 2), load16(raw, 18));
    (
        widen16(i16x8_extend_low_i8x16(q0), i16x8_extend_high_i8x16(q0)),
        widen16(i16x8_extend_low_i8x16(q1), i16x8_extend_high_i8x16(q1)),
        half(raw[0], raw[1]),
    )
}

/// [`super::scalar::q4_1_f32`].
pub fn q4_1_f32(row: &[u8], x: &[f32], xsum: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let mut acc = f32x4_splat(0.0);
    let mut mins = 0f32;
    for (b, (raw, &s)) in blocks.iter().zip(xsum).enumerate() {
        let (w_lo, w_hi, d, m) = q4_1_block(raw);
        let (x0, x1) = block32(x, b * 32);
        let blk = fma16(fma16(ZERO, &w_lo, x0), &w_hi, x1);
        acc = f32x4_add(acc, f32x4_mul(f32x4_splat(d), blk));
        mins += m * s;
    }
    hsum(acc) + mins
}

/// [`super::scalar::q8_0_f32`].
pub fn q8_0_f32(row: &[u8], x: &[f32]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let mut acc = f32x4_splat(0.0);
    for (b, raw) in blocks.iter().enumerate() {
        let (w0, w1, d) = q8_0_block(raw);
        let (x0, x1) = block32(x, b * 32);
        let blk = fma16(fma16(ZERO, &w0, x0), &w1, x1);
        acc = f32x4_add(acc, f32x4_mul(f32x4_splat(d), blk));
    }
    hsum(acc)
}

/// Each vector of `xs` as blocks of 32, each checked to hold `nb` blocks (the kernels
/// below then index them unchecked), the unused places empty.
fn blocks_of_each<'a>(xs: &[&'a [f32]], nb: usize) -> [&'a [[f32; 32]]; MAX_VECTORS] {
    assert!(xs.len() <= MAX_VECTORS, "at most {MAX_VECTORS} vectors");
    std::array::from_fn(|v| xs.get(v).map_or(&[][..], |x| super::blocks_of(x, nb)))
}

/// The two halves of a block of 32 activations.
#[inline]
fn halves(x: &[f32; 32]) -> (&[f32; 16], &[f32; 16]) {
    let (lo, hi) = x.split_at(16);
    (lo.try_into().expect("16"), hi.try_into().expect("16"))
}

/// [`q4_1_f32`] of one row with up to eight vectors: each block is widened once and met by
/// every vector, each vector's sum taken in [`q4_1_f32`]'s order (the same floats); the
/// eight `m·s` terms of a block are two vector multiplies and adds, lane by lane what
/// [`q4_1_f32`] does one at a time.
pub fn q4_1_f32_xn(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let n = x.len();
    let xs = blocks_of_each(x.xs, blocks.len());
    assert!(
        x.by_block.len() >= blocks.len(),
        "block sums shorter than the row"
    );
    let mut acc = [f32x4_splat(0.0); MAX_VECTORS];
    let (mut mins_lo, mut mins_hi) = (f32x4_splat(0.0), f32x4_splat(0.0));
    for (b, (raw, sums)) in blocks.iter().zip(x.by_block).enumerate() {
        let (w_lo, w_hi, d, m) = q4_1_block(raw);
        let d = f32x4_splat(d);
        for (acc, xv) in acc[..n].iter_mut().zip(&xs) {
            // SAFETY: `blocks_of_each` checked that every vector holds `blocks.len()` blocks.
            let (x0, x1) = halves(unsafe { xv.get_unchecked(b) });
            let blk = fma16(fma16(ZERO, &w_lo, x0), &w_hi, x1);
            *acc = f32x4_add(*acc, f32x4_mul(d, blk));
        }
        let m = f32x4_splat(m);
        mins_lo = f32x4_add(mins_lo, f32x4_mul(m, load4(sums, 0)));
        mins_hi = f32x4_add(mins_hi, f32x4_mul(m, load4(sums, 4)));
    }
    let mins = lanes(mins_lo).into_iter().chain(lanes(mins_hi));
    for ((o, acc), mins) in out[..n].iter_mut().zip(acc).zip(mins) {
        *o = hsum(acc) + mins;
    }
}

/// The four floats of `v`.
#[inline]
fn lanes(v: v128) -> [f32; 4] {
    [
        f32x4_extract_lane::<0>(v),
        f32x4_extract_lane::<1>(v),
        f32x4_extract_lane::<2>(v),
        f32x4_extract_lane::<3>(v),
    ]
}

/// [`q8_0_f32`] of one row with up to eight vectors, each block widened once (the same
/// floats as one vector at a time).
pub fn q8_0_f32_xn(row: &[u8], x: Vectors<'_>, out: &mut [f32]) {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let n = x.len();
    let xs = blocks_of_each(x.xs, blocks.len());
    let mut acc = [f32x4_splat(0.0); MAX_VECTORS];
    for (b, raw) in blocks.iter().enumerate() {
        let (w0, w1, d) = q8_0_block(raw);
        let d = f32x4_splat(d);
        for (acc, xv) in acc[..n].iter_mut().zip(&xs) {
            // SAFETY: `blocks_of_each` checked that every vector holds `blocks.len()` blocks.
            let (x0, x1) = halves(unsafe { xv.get_unchecked(b) });
            let blk = fma16(fma16(ZERO, &w0, x0), &w1, x1);
            *acc = f32x4_add(*acc, f32x4_mul(d, blk));
        }
    }
    for (o, acc) in out[..n].iter_mut().zip(acc) {
        *o = hsum(acc);
    }
}

/// `Σ w·y` over 16 byte pairs, widened to i16 (`w` already widened halves).
#[inline]
fn idot16(w_lo: v128, w_hi: v128, y: v128) -> v128 {
    i32x4_add(
        i32x4_dot_i16x8(w_lo, i16x8_extend_low_i8x16(y)),
        i32x4_dot_i16x8(w_hi, i16x8_extend_high_i8x16(y)),
    )
}

/// The 32 codes of a Q8 activation block, as two vectors.
#[inline]
fn codes(y: &Q8Block) -> (v128, v128) {
    // SAFETY: `qs` is 32 readable bytes.
    unsafe {
        (
            v128_load(y.qs.as_ptr().cast()),
            v128_load(y.qs.as_ptr().add(16).cast()),
        )
    }
}

/// [`super::scalar::q4_1_q8`].
pub fn q4_1_q8(row: &[u8], xq: &[Q8Block]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ4_1::BYTES }>();
    let low = u8x16_splat(0x0F);
    let mut acc = f32x4_splat(0.0);
    let mut mins = 0f32;
    for (raw, y) in blocks.iter().zip(xq) {
        let qs = load16(raw, 4);
        let lo = v128_and(qs, low);
        let hi = u8x16_shr(qs, 4);
        let (y0, y1) = codes(y);
        let p = i32x4_add(
            idot16(u16x8_extend_low_u8x16(lo), u16x8_extend_high_u8x16(lo), y0),
            idot16(u16x8_extend_low_u8x16(hi), u16x8_extend_high_u8x16(hi), y1),
        );
        let scale = f32x4_splat(half(raw[0], raw[1]) * y.d);
        acc = f32x4_add(acc, f32x4_mul(scale, f32x4_convert_i32x4(p)));
        mins += half(raw[2], raw[3]) * y.s;
    }
    hsum(acc) + mins
}

/// [`super::scalar::q8_0_q8`].
pub fn q8_0_q8(row: &[u8], xq: &[Q8Block]) -> f32 {
    let (blocks, _) = row.as_chunks::<{ BlockQ8_0::BYTES }>();
    let mut acc = f32x4_splat(0.0);
    for (raw, y) in blocks.iter().zip(xq) {
        let (q0, q1) = (load16(raw, 2), load16(raw, 18));
        let (y0, y1) = codes(y);
        let p = i32x4_add(
            idot16(i16x8_extend_low_i8x16(q0), i16x8_extend_high_i8x16(q0), y0),
            idot16(i16x8_extend_low_i8x16(q1), i16x8_extend_high_i8x16(q1), y1),
        );
        let scale = f32x4_splat(half(raw[0], raw[1]) * y.d);
        acc = f32x4_add(acc, f32x4_mul(scale, f32x4_convert_i32x4(p)));
    }
    hsum(acc)
}

/// [`super::scalar::f32_dot`].
pub fn f32_dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let mut acc = f32x4_splat(0.0);
    let mut i = 0;
    while i + 4 <= n {
        acc = f32x4_add(acc, f32x4_mul(load4(a, i), load4(b, i)));
        i += 4;
    }
    let tail: f32 = a[i..n].iter().zip(&b[i..n]).map(|(x, y)| x * y).sum();
    hsum(acc) + tail
}
