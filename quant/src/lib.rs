//! GGUF quantization blocks and their plain scalar dequantization: the one implementation
//! shared by `lm` (the GGUF reader), `cpu-kernels` (its scalar references) and `shaders`
//! (the CPU references of the WGSL decoders).
//!
//! Source of truth: ggml's `ggml/src/ggml-common.h` (`block_q4_1`, `block_q8_0`) and the
//! reference dequantizers `dequantize_row_q4_1` / `dequantize_row_q8_0` in
//! `ggml/src/ggml-quants.c`; the GGUF spec (`docs/gguf.md` in the ggml repository) for
//! the type ids. All fields are little-endian.
//!
//! Blocks are read by value from 20- or 34-byte chunks of the file ([`BlockQ4_1::read`]),
//! so any buffer alignment works and no `unsafe` is needed.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod ggml_type;
pub mod k_quants;
pub mod legacy;

pub use ggml_type::GgmlType;

pub use k_quants::{
    Q2_K_BYTES, Q3_K_BYTES, Q4_K_BYTES, Q5_K_BYTES, Q6_K_BYTES, QK_K, dequantize_q2_k,
    dequantize_q3_k, dequantize_q4_k, dequantize_q5_k, dequantize_q6_k, q3_k_scale, scale_min_k4,
};
pub use legacy::{
    Q4_0_BYTES, Q5_0_BYTES, Q5_1_BYTES, dequantize_bf16, dequantize_q4_0, dequantize_q5_0,
    dequantize_q5_1, q4_0_as_q4_1,
};

/// Weights per Q4_1 block.
pub const QK4_1: usize = 32;
/// Weights per Q8_0 block.
pub const QK8_0: usize = 32;

/// 32 weights as 4-bit codes with a scale and a minimum: `w = d·q + m`.
///
/// Code `qs[j] & 0x0F` is weight `j`, code `qs[j] >> 4` is weight `j + 16`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ4_1 {
    /// Scale, IEEE half bits.
    pub d: u16,
    /// Minimum, IEEE half bits.
    pub m: u16,
    /// 32 nibbles.
    pub qs: [u8; QK4_1 / 2],
}

/// 32 weights as signed bytes with a scale: `w = d·q`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ8_0 {
    /// Scale, IEEE half bits.
    pub d: u16,
    /// 32 signed codes.
    pub qs: [i8; QK8_0],
}

const _: () = assert!(
    size_of::<BlockQ4_1>() == 20,
    "Q4_1 is 20 bytes per 32 weights"
);
const _: () = assert!(
    size_of::<BlockQ8_0>() == 34,
    "Q8_0 is 34 bytes per 32 weights"
);

impl BlockQ4_1 {
    /// Bytes per block.
    pub const BYTES: usize = size_of::<Self>();

    /// Reads a block from its 20 file bytes.
    #[inline]
    pub fn read(b: &[u8; Self::BYTES]) -> Self {
        let mut qs = [0u8; QK4_1 / 2];
        qs.copy_from_slice(&b[4..]);
        BlockQ4_1 {
            d: u16::from_le_bytes([b[0], b[1]]),
            m: u16::from_le_bytes([b[2], b[3]]),
            qs,
        }
    }

    /// The 32 weights.
    #[inline]
    pub fn dequantize(&self) -> [f32; QK4_1] {
        let (d, m) = (f16_to_f32(self.d), f16_to_f32(self.m));
        let mut out = [0f32; QK4_1];
        for (j, &q) in self.qs.iter().enumerate() {
            out[j] = (q & 0x0F) as f32 * d + m;
            out[j + QK4_1 / 2] = (q >> 4) as f32 * d + m;
        }
        out
    }
}

impl BlockQ8_0 {
    /// Bytes per block.
    pub const BYTES: usize = size_of::<Self>();

    /// Reads a block from its 34 file bytes.
    #[inline]
    pub fn read(b: &[u8; Self::BYTES]) -> Self {
        let mut qs = [0i8; QK8_0];
        for (q, &byte) in qs.iter_mut().zip(&b[2..]) {
            *q = byte as i8;
        }
        BlockQ8_0 {
            d: u16::from_le_bytes([b[0], b[1]]),
            qs,
        }
    }

    /// The 32 weights.
    #[inline]
    pub fn dequantize(&self) -> [f32; QK8_0] {
        let d = f16_to_f32(self.d);
        let mut out = [0f32; QK8_0];
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = q as f32 * d;
        }
        out
    }
}

/// Converts IEEE 754 half-precision bits to f32 exactly (subnormals, infinities, NaN).
///
/// Branch-light, so row decoders vectorize: the half's exponent and mantissa, shifted into
/// an f32's places, read as a float 2^112 times too small, for normal and subnormal halves
/// alike, and the product by 2^112 is exact; only infinities and NaN take the other arm.
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    const TWO_POW_112: f32 = f32::from_bits((127 + 112) << 23);
    let sign = ((h as u32) & 0x8000) << 16;
    let rest = ((h as u32) & 0x7FFF) << 13;
    let bits = if rest >= 0x7C00 << 13 {
        rest | 0x7F80_0000
    } else {
        (f32::from_bits(rest) * TWO_POW_112).to_bits()
    };
    f32::from_bits(sign | bits)
}

/// The f16 bits of `x` when an f16 holds it exactly and it is finite (normal or zero;
/// subnormal halves are not produced), else `None`.
pub fn f32_to_f16_exact(x: f32) -> Option<u16> {
    if x == 0.0 {
        return Some(if x.is_sign_negative() { 0x8000 } else { 0 });
    }
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xFF) as i32 - 127 + 15;
    let mant = bits & 0x7F_FFFF;
    if !(1..=30).contains(&exp) || mant & 0x1FFF != 0 {
        return None;
    }
    let h = sign | ((exp as u16) << 10) | (mant >> 13) as u16;
    (f16_to_f32(h) == x).then_some(h)
}

/// Dequantizes Q4_1 data (whole blocks) into `out`, which must hold 32 floats per block.
#[inline]
pub fn dequantize_q4_1(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<{ BlockQ4_1::BYTES }>();
    for (b, o) in blocks.iter().zip(out.chunks_exact_mut(QK4_1)) {
        o.copy_from_slice(&BlockQ4_1::read(b).dequantize());
    }
}

/// Dequantizes Q8_0 data (whole blocks) into `out`, which must hold 32 floats per block.
#[inline]
pub fn dequantize_q8_0(data: &[u8], out: &mut [f32]) {
    let (blocks, _) = data.as_chunks::<{ BlockQ8_0::BYTES }>();
    for (b, o) in blocks.iter().zip(out.chunks_exact_mut(QK8_0)) {
        o.copy_from_slice(&BlockQ8_0::read(b).dequantize());
    }
}

/// Converts little-endian f16 data into `out`.
#[inline]
pub fn dequantize_f16(data: &[u8], out: &mut [f32]) {
    let (halves, _) = data.as_chunks::<2>();
    for (h, o) in halves.iter().zip(out.iter_mut()) {
        *o = f16_to_f32(u16::from_le_bytes(*h));
    }
}

/// Converts little-endian f32 data into `out`.
#[inline]
pub fn dequantize_f32(data: &[u8], out: &mut [f32]) {
    let (words, _) = data.as_chunks::<4>();
    for (w, o) in words.iter().zip(out.iter_mut()) {
        *o = f32::from_le_bytes(*w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every type's dequantization against the `gguf` PyPI package's numpy dequantizers
    /// on the same random blocks (`fixtures/make_fixtures.py`): equal up to f32 rounding
    /// of a different order of operations.
    #[test]
    fn every_type_matches_the_gguf_package() {
        type Dequantize = fn(&[u8], &mut [f32]);
        let cases: [(&str, Dequantize); 12] = [
            ("Q4_0", dequantize_q4_0),
            ("Q4_1", dequantize_q4_1),
            ("Q5_0", dequantize_q5_0),
            ("Q5_1", dequantize_q5_1),
            ("Q8_0", dequantize_q8_0),
            ("Q2_K", dequantize_q2_k),
            ("Q3_K", dequantize_q3_k),
            ("Q4_K", dequantize_q4_k),
            ("Q5_K", dequantize_q5_k),
            ("Q6_K", dequantize_q6_k),
            ("F16", dequantize_f16),
            ("BF16", dequantize_bf16),
        ];
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        for (name, f) in cases {
            let blocks = std::fs::read(dir.join(format!("{name}.blocks"))).unwrap();
            let want: Vec<f32> = std::fs::read(dir.join(format!("{name}.f32")))
                .unwrap()
                .as_chunks::<4>()
                .0
                .iter()
                .map(|b| f32::from_le_bytes(*b))
                .collect();
            let mut got = vec![f32::NAN; want.len()];
            f(&blocks, &mut got);
            let scale = want.iter().fold(0f32, |a, v| a.max(v.abs()));
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-6 * scale,
                    "{name}[{i}]: {g} vs {w} (gguf)"
                );
            }
            // Not all zero: the fixture exercises the codes.
            assert!(
                want.iter().filter(|v| **v != 0.0).count() > want.len() / 2,
                "{name}"
            );
        }
    }

    /// Every one of the 65 536 halves converts to the value its fields spell out.
    #[test]
    fn f16_conversion_is_exact_for_every_half() {
        for h in 0..=u16::MAX {
            let (sign, exp, mant) = (h >> 15, ((h >> 10) & 0x1F) as i32, (h & 0x3FF) as f64);
            let v = match exp {
                0 => mant * 2f64.powi(-24),
                0x1F if mant == 0.0 => f64::INFINITY,
                0x1F => f64::NAN,
                e => (1.0 + mant / 1024.0) * 2f64.powi(e - 15),
            };
            let want = if sign == 1 { -v } else { v } as f32;
            let got = f16_to_f32(h);
            if want.is_nan() {
                // The payload moves to the top of the f32 mantissa, as F16C does.
                let nan = ((h as u32 & 0x8000) << 16) | 0x7F80_0000 | ((h as u32 & 0x3FF) << 13);
                assert_eq!(got.to_bits(), nan, "{h:#06x}");
            } else {
                assert_eq!(got.to_bits(), want.to_bits(), "{h:#06x}");
            }
        }
    }

    #[test]
    fn f16_conversion_matches_known_values() {
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
        assert_eq!(f16_to_f32(0x7BFF), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03FF), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x0400), 2f32.powi(-14));
        assert_eq!(f16_to_f32(0x3555), 0.33325195);
        assert_eq!(f16_to_f32(0x7C00), f32::INFINITY);
        assert_eq!(f16_to_f32(0xFC00), f32::NEG_INFINITY);
        assert!(f16_to_f32(0x7E00).is_nan());
        assert_eq!(f16_to_f32(0x8000).to_bits(), (-0.0f32).to_bits());
    }

    /// Q4_0 rewritten as Q4_1 dequantizes to the same floats; a block whose −8·d
    /// overflows f16 is refused.
    #[test]
    fn q4_0_runs_as_q4_1_exactly() {
        let blocks = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/Q4_0.blocks"),
        )
        .unwrap();
        let n = blocks.len() / Q4_0_BYTES * 32;
        let (mut a, mut b) = (vec![0f32; n], vec![0f32; n]);
        dequantize_q4_0(&blocks, &mut a);
        dequantize_q4_1(&q4_0_as_q4_1(&blocks).unwrap(), &mut b);
        // Equal values (a zero weight may change sign: −0·d against 8·d − 8·d).
        assert!(a.iter().zip(&b).all(|(x, y)| x == y));
        assert!(a.iter().filter(|x| **x != 0.0).count() > n / 2);
        let mut big = blocks[..Q4_0_BYTES].to_vec();
        big[0..2].copy_from_slice(&0x7000u16.to_le_bytes()); // d = 8192: −8·d overflows
        assert_eq!(q4_0_as_q4_1(&big), None);
        assert_eq!(f32_to_f16_exact(-0.25), Some(0xB400));
        assert_eq!(f32_to_f16_exact(0.1), None);
    }

    #[test]
    fn q4_1_nibble_order_and_formula() {
        // d = 0.5, m = -1.0; byte j holds weight j (low) and weight j + 16 (high).
        let mut bytes = [0u8; 20];
        bytes[0..2].copy_from_slice(&0x3800u16.to_le_bytes());
        bytes[2..4].copy_from_slice(&0xBC00u16.to_le_bytes());
        for j in 0..16 {
            bytes[4 + j] = (j as u8) | ((15 - j as u8) << 4);
        }
        let w = BlockQ4_1::read(&bytes).dequantize();
        for j in 0..16 {
            assert_eq!(w[j], 0.5 * j as f32 - 1.0);
            assert_eq!(w[j + 16], 0.5 * (15 - j) as f32 - 1.0);
        }
    }

    #[test]
    fn q8_0_signed_codes() {
        let mut bytes = [0u8; 34];
        bytes[0..2].copy_from_slice(&0x4000u16.to_le_bytes()); // d = 2
        for j in 0..32 {
            bytes[2 + j] = (j as i8 - 16) as u8;
        }
        let w = BlockQ8_0::read(&bytes).dequantize();
        for (j, &x) in w.iter().enumerate() {
            assert_eq!(x, 2.0 * (j as f32 - 16.0));
        }
    }
}
