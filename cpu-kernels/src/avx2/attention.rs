//! Attention's two loops over a page of cached keys and values, with AVX2: the scores
//! (one query against several keys) and the weighted sum of the values. Each result is
//! exactly the one-row arithmetic's (`f32_dot` for a score; for the sum, each product
//! rounded and then added, one value row after another, as the scalar loop does), so
//! batching keys changes no float; the gain is four keys' independent sums in flight at
//! once and an output head that stays in registers across the values.

use super::{f32_dot, hsum, load8};
use std::arch::x86_64::*;

/// [`super::super::scalar::f32_dots`]: four keys at a time, each summed as [`f32_dot`]
/// sums it.
#[target_feature(enable = "avx2,fma,f16c")]
pub fn f32_dots(q: &[f32], rows: &[f32], stride: usize, out: &mut [f32]) {
    let n = q.len();
    let mut j = 0;
    while j + 4 <= out.len() {
        let r: [&[f32]; 4] = [
            &rows[j * stride..][..n],
            &rows[(j + 1) * stride..][..n],
            &rows[(j + 2) * stride..][..n],
            &rows[(j + 3) * stride..][..n],
        ];
        let (mut s0, mut s1) = ([_mm256_setzero_ps(); 4], [_mm256_setzero_ps(); 4]);
        let mut i = 0;
        while i + 16 <= n {
            let (qa, qb) = (load8(q, i), load8(q, i + 8));
            for k in 0..4 {
                s0[k] = _mm256_fmadd_ps(qa, load8(r[k], i), s0[k]);
                s1[k] = _mm256_fmadd_ps(qb, load8(r[k], i + 8), s1[k]);
            }
            i += 16;
        }
        if i + 8 <= n {
            let qa = load8(q, i);
            for k in 0..4 {
                s0[k] = _mm256_fmadd_ps(qa, load8(r[k], i), s0[k]);
            }
            i += 8;
        }
        for k in 0..4 {
            let tail: f32 = q[i..n].iter().zip(&r[k][i..n]).map(|(x, y)| x * y).sum();
            out[j + k] = hsum(_mm256_add_ps(s0[k], s1[k])) + tail;
        }
        j += 4;
    }
    for (jj, o) in out.iter_mut().enumerate().skip(j) {
        *o = f32_dot(q, &rows[jj * stride..][..n]);
    }
}

/// [`super::super::scalar::f32_axpys`]: the sum 64 floats at a time in eight registers
/// held across every row, then eight at a time, then one; each lane a multiply and an add
/// per row, in row order (no fused multiply-add, which would round once instead of twice:
/// the function may use FMA instructions, but Rust never fuses a separate multiply and add).
#[target_feature(enable = "avx2,fma,f16c")]
pub fn f32_axpys(p: &[f32], rows: &[f32], stride: usize, acc: &mut [f32]) {
    let len = acc.len();
    if let Some(last) = p.len().checked_sub(1) {
        assert!(
            last * stride + len <= rows.len(),
            "rows shorter than the sum"
        );
    }
    let mut c = 0;
    while c + 64 <= len {
        let mut a: [__m256; 8] = std::array::from_fn(|r| load8(acc, c + 8 * r));
        for (j, &pj) in p.iter().enumerate() {
            let pv = _mm256_set1_ps(pj);
            let row = &rows[j * stride + c..][..64];
            for (r, a) in a.iter_mut().enumerate() {
                *a = _mm256_add_ps(*a, _mm256_mul_ps(pv, load8(row, 8 * r)));
            }
        }
        for (r, a) in a.iter().enumerate() {
            store8(acc, c + 8 * r, *a);
        }
        c += 64;
    }
    while c + 8 <= len {
        let mut a = load8(acc, c);
        for (j, &pj) in p.iter().enumerate() {
            a = _mm256_add_ps(
                a,
                _mm256_mul_ps(_mm256_set1_ps(pj), load8(rows, j * stride + c)),
            );
        }
        store8(acc, c, a);
        c += 8;
    }
    for (i, a) in acc.iter_mut().enumerate().skip(c) {
        for (j, &pj) in p.iter().enumerate() {
            *a += pj * rows[j * stride + i];
        }
    }
}

/// Stores eight floats at `x[at..at + 8]` (bounds checked).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn store8(x: &mut [f32], at: usize, v: __m256) {
    let c: &mut [f32; 8] = (&mut x[at..at + 8]).try_into().expect("8 floats");
    // SAFETY: `c` is 8 writable floats; storeu has no alignment requirement.
    unsafe { _mm256_storeu_ps(c.as_mut_ptr(), v) }
}
