//! Attention's two loops over a page of cached keys and values, with `simd128`: the
//! scores (one query against several keys) and the weighted sum of the values. Each
//! result is exactly the one-row arithmetic's (`f32_dot` for a score; for the sum, each
//! product rounded and then added, one value row after another, as the scalar loop
//! does); the gain is four keys' independent sums in flight at once (`f32_dot`'s one
//! accumulator waits on each add) and an output head kept in locals across the values.

use super::{f32_dot, hsum, load4};
use std::arch::wasm32::*;

/// [`super::super::scalar::f32_dots`]: four keys at a time, each summed as [`f32_dot`]
/// sums it.
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
        let mut acc = [f32x4_splat(0.0); 4];
        let mut i = 0;
        while i + 4 <= n {
            let qv = load4(q, i);
            for k in 0..4 {
                acc[k] = f32x4_add(acc[k], f32x4_mul(qv, load4(r[k], i)));
            }
            i += 4;
        }
        for k in 0..4 {
            let tail: f32 = q[i..n].iter().zip(&r[k][i..n]).map(|(x, y)| x * y).sum();
            out[j + k] = hsum(acc[k]) + tail;
        }
        j += 4;
    }
    for (jj, o) in out.iter_mut().enumerate().skip(j) {
        *o = f32_dot(q, &rows[jj * stride..][..n]);
    }
}

/// [`super::super::scalar::f32_axpys`]: the sum 64 floats at a time in sixteen locals held
/// across every row, then four at a time, then one; each lane a multiply and an add per
/// row, in row order.
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
        let mut a: [v128; 16] = std::array::from_fn(|r| load4(acc, c + 4 * r));
        for (j, &pj) in p.iter().enumerate() {
            let pv = f32x4_splat(pj);
            let row = &rows[j * stride + c..][..64];
            for (r, a) in a.iter_mut().enumerate() {
                *a = f32x4_add(*a, f32x4_mul(pv, load4(row, 4 * r)));
            }
        }
        for (r, a) in a.iter().enumerate() {
            store4(acc, c + 4 * r, *a);
        }
        c += 64;
    }
    while c + 4 <= len {
        let mut a = load4(acc, c);
        for (j, &pj) in p.iter().enumerate() {
            a = f32x4_add(a, f32x4_mul(f32x4_splat(pj), load4(rows, j * stride + c)));
        }
        store4(acc, c, a);
        c += 4;
    }
    for (i, a) in acc.iter_mut().enumerate().skip(c) {
        for (j, &pj) in p.iter().enumerate() {
            *a += pj * rows[j * stride + i];
        }
    }
}

/// Stores four floats at `x[at..at + 4]` (bounds checked).
#[inline]
fn store4(x: &mut [f32], at: usize, v: v128) {
    let c: &mut [f32; 4] = (&mut x[at..at + 4]).try_into().expect("4 floats");
    // SAFETY: `c` is 16 writable bytes; v128_store has no alignment requirement.
    unsafe { v128_store(c.as_mut_ptr().cast(), v) }
}
