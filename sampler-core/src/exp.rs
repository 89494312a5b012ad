//! `e^x` without a library call, in f32 and in f64, so that the loops over many values
//! that use it (the attention softmax and SwiGLU's SiLU in f32; the log-softmax over the
//! vocabulary and the samplers' probabilities in f64) compile to vector code on every
//! target, wasm32 included, where `f32::exp` and `f64::exp` are a scalar call into libm per
//! element.
//!
//! The usual construction: `x = k·ln 2 + r` with `k` the nearest integer to `x / ln 2`
//! (rounded by adding and subtracting 1.5·2^(mantissa bits)), `r` within ±ln 2 / 2 (`ln 2`
//! split in two parts so that `k·ln 2` is exact), `e^r` by a polynomial (f32: the classic
//! degree-7 minimax fit for this interval; f64: Taylor's to degree 13, whose first omitted
//! term is below 5e-18 of the result there), and `2^k` made from its bits. Relative error
//! within a few units in the last place (the tests bound it); only arithmetic and selects,
//! so a value is the same bits on every target, scalar or vector.

/// `log2(e)` in f32.
const LOG2E_32: f32 = std::f32::consts::LOG2_E;
/// `ln 2` in two parts: the first has few mantissa bits, so `k` times it is exact.
const LN2_HI_32: f32 = 0.693_359_4;
const LN2_LO_32: f32 = -2.121_944_4e-4;
/// Adding and subtracting this rounds an f32 below 2²² in size to the nearest integer.
const ROUND_32: f32 = 12_582_912.0;
/// Below `ln(2⁻¹²⁶)` the f32 result would be subnormal: [`exp32`] gives 0 there.
const LOWEST_32: f32 = -87.336_55;
/// f32 inputs above this are taken as this (the result stays finite: about 1.65e38).
const HIGHEST_32: f32 = 88.0;

/// `e^x` in f32 to within a few ulp; 0 below `ln(2⁻¹²⁶)` (where `e^x` < 1.2e-38), about
/// 1.65e38 above 88; NaN for NaN.
#[inline(always)]
pub fn exp32(x: f32) -> f32 {
    let xc = x.clamp(LOWEST_32, HIGHEST_32);
    let t = xc * LOG2E_32 + ROUND_32;
    let kf = t - ROUND_32;
    // `t`'s low mantissa bits hold k: its exponent is fixed in [2²³, 2²⁴), one unit apart.
    let k = t.to_bits().wrapping_sub(ROUND_32.to_bits()) as i32;
    let r = xc - kf * LN2_HI_32 - kf * LN2_LO_32;
    let mut p = 1.987_569_1e-4;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let er = p * (r * r) + r + 1.0;
    let y = er * f32::from_bits(((k + 127) as u32) << 23);
    if x < LOWEST_32 { 0.0 } else { y }
}

/// `log2(e)` in f64.
const LOG2E_64: f64 = std::f64::consts::LOG2_E;
/// `ln 2` in two parts (the first with 32 trailing zero bits).
const LN2_HI_64: f64 = 6.931_471_803_691_238e-1;
const LN2_LO_64: f64 = 1.908_214_929_270_587_7e-10;
/// Adding and subtracting this rounds an f64 below 2⁵¹ in size to the nearest integer.
const ROUND_64: f64 = 6_755_399_441_055_744.0;
/// Below `ln(2⁻¹⁰²²)` the f64 result would be subnormal: [`exp64`] gives 0 there.
const LOWEST_64: f64 = -708.396_418_532_264_1;
/// f64 inputs above this are taken as this (the result stays finite: about 8.2e307).
const HIGHEST_64: f64 = 709.0;

/// `1/n!` for n = 0..=13, Taylor's coefficients of `e^r`.
const INV_FACTORIAL: [f64; 14] = {
    let mut c = [1.0; 14];
    let mut n = 1;
    while n < 14 {
        c[n] = c[n - 1] / n as f64;
        n += 1;
    }
    c
};

/// `e^x` in f64 to within a few ulp; 0 below `ln(2⁻¹⁰²²)` (where `e^x` < 2.3e-308),
/// about 8.2e307 above 709; NaN for NaN.
#[inline(always)]
pub fn exp64(x: f64) -> f64 {
    let xc = x.clamp(LOWEST_64, HIGHEST_64);
    let t = xc * LOG2E_64 + ROUND_64;
    let kf = t - ROUND_64;
    let k = t.to_bits().wrapping_sub(ROUND_64.to_bits()) as i64;
    let r = xc - kf * LN2_HI_64 - kf * LN2_LO_64;
    let mut p = INV_FACTORIAL[13];
    for &c in INV_FACTORIAL[2..13].iter().rev() {
        p = p * r + c;
    }
    let er = p * (r * r) + r + 1.0;
    let y = er * f64::from_bits(((k + 1023) as u64) << 52);
    if x < LOWEST_64 { 0.0 } else { y }
}

#[cfg(test)]
mod tests {
    use super::{exp32, exp64};

    /// Relative error against the library's `exp` in f64 over a fine grid of the whole f32
    /// range, the edges and the special values.
    #[test]
    fn exp32_matches_the_library_exp() {
        let mut x = -87.3f32;
        let mut seen = 0;
        while x < 88.0 {
            let want = f64::from(x).exp();
            let got = f64::from(exp32(x));
            let rel = ((got - want) / want).abs();
            assert!(
                rel < 3e-7,
                "exp32({x}) = {got}, want {want} (relative {rel:e})"
            );
            x += 0.000_731;
            seen += 1;
        }
        assert!(seen > 200_000);
        assert_eq!(exp32(0.0), 1.0);
        assert_eq!(exp32(-88.0), 0.0);
        assert_eq!(exp32(f32::NEG_INFINITY), 0.0);
        assert!(exp32(f32::NAN).is_nan());
        assert!(exp32(200.0).is_finite() && exp32(200.0) > 1e38);
        let xs: Vec<f32> = (0..4000).map(|i| -20.0 + i as f32 * 0.01).collect();
        assert!(xs.windows(2).all(|w| exp32(w[0]) <= exp32(w[1])));
    }

    /// The f64 version within 4 ulp of the library's over its whole range (the library's
    /// own error is under 1 ulp), and its edges.
    #[test]
    fn exp64_matches_the_library_exp() {
        let mut x = -708.0f64;
        let mut worst = 0f64;
        while x < 709.0 {
            let want = x.exp();
            let rel = ((exp64(x) - want) / want).abs();
            worst = worst.max(rel);
            x += 0.000_913;
        }
        assert!(worst < 4.0 * f64::EPSILON, "worst relative error {worst:e}");
        for x in [-1e-300, 1e-300, 1e-9, -0.5, 0.346_573_590_279_972_6] {
            assert!(
                ((exp64(x) - x.exp()) / x.exp()).abs() < 2.0 * f64::EPSILON,
                "{x}"
            );
        }
        assert_eq!(exp64(0.0), 1.0);
        assert_eq!(exp64(-709.0), 0.0);
        assert_eq!(exp64(f64::NEG_INFINITY), 0.0);
        assert!(exp64(f64::NAN).is_nan());
        assert!(exp64(1e4).is_finite() && exp64(1e4) > 1e307);
    }
}
