//! The output product folded into attention ([`AttentionOutput::Shares`]) and the two
//! products that add its shares ([`MatVecInput::RmsNormedPlusShares`],
//! [`MatVecOutput::AddShares`]), against attention then the output product, and the
//! shares summed then the product, on the CPU.

use crate::common;
use crate::kernels::{assert_close, random_matrix};

use common::{Rng, gpu_tests};
use shaders::*;

const EPS: f32 = 1e-5;

fn step(gpu: &Gpu, n: usize, n_past: usize) -> wgpu::Buffer {
    Step {
        n: n as u32,
        n_past: n_past as u32,
        first: 0,
    }
    .buffer(gpu)
}

/// `n` tokens of `heads` shares of `width` floats in [-1, 1].
fn random_shares(rng: &mut Rng, n: usize, heads: usize, width: usize) -> Vec<f32> {
    (0..n * heads * width).map(|_| rng.f32()).collect()
}

/// Each token's `x` plus its heads' shares (the residual after the output product).
fn plus_shares(x: &[f32], shares: &[f32], heads: usize, width: usize) -> Vec<f32> {
    x.chunks(width)
        .enumerate()
        .flat_map(|(t, xt)| {
            (0..width).map(move |c| {
                xt[c]
                    + (0..heads)
                        .map(|h| shares[(t * heads + h) * width + c])
                        .sum::<f32>()
            })
        })
        .collect()
}

gpu_tests! {
    // SmolLM2's head layout (9 heads over 3, 64 wide) with Q8_0, and 64-wide heads inside
    // Q4_K's 256-column superblocks (a head's columns are part of a block's), after
    // nothing cached and after 70 positions, one token and three.
    async fn attention_shares_match_attention_then_each_heads_columns() {
        let gpu = common::gpu().await;
        let mut rng = Rng(91);
        let heads = Attention::new(&gpu).await.unwrap();
        for (f, n_heads, n_kv_heads, out_rows) in
            [(WeightFormat::Q8_0, 9, 3, 72), (WeightFormat::Q4K, 4, 2, 40)]
        {
            let s = AttentionShape { n_heads, n_kv_heads, head_dim: 64, max_ctx: 80 };
            let q_dim = n_heads * s.head_dim;
            let w = random_matrix(&mut rng, f, out_rows, q_dim);
            let wb = gpu.storage("w", &w).unwrap();
            let k = Attention::with_output(&gpu, KvFormat::F32, AttentionOutput::Shares(f))
                .await
                .unwrap();
            let dims = Attention::dims_shares(&gpu, &s, out_rows).unwrap();
            for (n_past, n) in [(0usize, 1usize), (70, 3)] {
                let kv_dim = n_kv_heads * s.head_dim;
                let q: Vec<f32> = (0..n * q_dim).map(|_| rng.f32()).collect();
                let kc: Vec<f32> = (0..s.max_ctx * kv_dim).map(|_| 2.0 * rng.f32()).collect();
                let vc: Vec<f32> = (0..s.max_ctx * kv_dim).map(|_| rng.f32()).collect();
                let [qb, kb, vb] = [&q, &kc, &vc].map(|v| gpu.storage("in", &f32_bytes(v)).unwrap());
                let sc = gpu.zeroed("scores", s.scratch_len(n)).unwrap();
                let out = gpu.zeroed("shares", n * n_heads * out_rows).unwrap();
                let st = step(&gpu, n, n_past);
                let bind =
                    k.bind_shares(&gpu, &qb, (&kb, &vb), &sc, &out, &wb, &dims, &st).unwrap();
                // Each form refuses the other's bindings (a wrong bind group would be a
                // validation error, a panic natively).
                assert!(k.bind(&gpu, &qb, &kb, &vb, &sc, &out, &dims, &st).is_err());
                assert!(heads.bind_shares(&gpu, &qb, (&kb, &vb), &sc, &out, &wb, &dims, &st).is_err());
                gpu.run(|p| k.dispatch(p, &bind, n_heads, n)).unwrap();
                let got = gpu.read_f32(&out, 0, n * n_heads * out_rows).await.unwrap();
                let want = attention_shares_reference(&s, f, &w, out_rows, &q, &kc, &vc, n_past, n);
                // Each head's results are convex combinations of values in [-1, 1], off by
                // the rounding of sums over the visible positions; a share multiplies them
                // by the head's weights: room for both, scaled by Σ|w| over its columns.
                let rows: Vec<Vec<f32>> =
                    (0..out_rows).map(|r| f.dequantize_row(&w, r, q_dim)).collect();
                let mag: Vec<f32> = (0..n * n_heads * out_rows)
                    .map(|i| {
                        let (h, r) = ((i / out_rows) % n_heads, i % out_rows);
                        rows[r][h * s.head_dim..][..s.head_dim].iter().map(|v| v.abs()).sum()
                    })
                    .collect();
                let what = format!("attention shares {f:?} {n_heads}/{n_kv_heads} heads, n_past {n_past}, n {n}");
                assert_close(&got, &want, &mag, s.max_ctx + s.head_dim, &what);
            }
        }
        let narrow = AttentionShape { n_heads: 2, n_kv_heads: 1, head_dim: 48, max_ctx: 8 };
        assert!(Attention::dims_shares(&gpu, &narrow, 32).is_err());
    }

    // The gate/up product reading x plus the shares, normed; down accumulating its product
    // and the shares into the residual: both strategies, one token and six (a second group
    // of four along z), against the shares summed on the CPU then the unfused reference.
    async fn products_add_the_heads_shares() {
        let gpu = common::gpu().await;
        let mut rng = Rng(92);
        let (rows, cols, heads) = (48, 256, 3);
        for (f, n) in [(WeightFormat::Q8_0, 1usize), (WeightFormat::Q4K, 6)] {
            let w = random_matrix(&mut rng, f, rows, cols);
            let wb = gpu.storage("w", &w).unwrap();
            let x: Vec<f32> = (0..n * cols).map(|_| 3.0 * rng.f32()).collect();
            let g: Vec<f32> = (0..cols).map(|_| 1.0 + 0.5 * rng.f32()).collect();
            let xb = gpu.storage("x", &f32_bytes(&x)).unwrap();
            let gb = gpu.storage("g", &f32_bytes(&g)).unwrap();
            let fuse = MatVec::fuse_dims(&gpu, EPS, 2, 0, false).unwrap();
            let st = step(&gpu, n, 0);
            // Input: the shares of `cols` columns; output: the shares of `rows` rows.
            let in_shares = random_shares(&mut rng, n, heads, cols);
            let out_shares = random_shares(&mut rng, n, heads, rows);
            let before: Vec<f32> = (0..n * rows).map(|_| rng.f32()).collect();
            let normed = rms_norm_reference(&plus_shares(&x, &in_shares, heads, cols), &g, EPS);
            let (want_in, mag_in) = matvec_reference(f, &w, rows, cols, &normed, n);
            let (prod, mag) = matvec_reference(f, &w, rows, cols, &x, n);
            let added = plus_shares(&before, &out_shares, heads, rows);
            let want_out: Vec<f32> = prod.iter().zip(&added).map(|(p, a)| p + a).collect();
            // The residual and shares add |values| ≤ 1 each to the sum's magnitude.
            let mag_out: Vec<f32> = mag.iter().map(|m| m + (heads + 1) as f32).collect();
            let cases = [
                (MatVecInput::RmsNormedPlusShares, MatVecOutput::One, &in_shares, MatVecMode::Write),
                (MatVecInput::Vectors, MatVecOutput::AddShares, &out_shares, MatVecMode::Accumulate),
            ];
            for (input, output, shares, mode) in cases {
                let sb = gpu.storage("shares", &f32_bytes(shares)).unwrap();
                let dims = MatVec::dims_shares(&gpu, rows, cols, mode, heads).unwrap();
                for strategy in common::matvec_strategies(&gpu) {
                    let k = MatVec::fused(&gpu, f, strategy, input, output).await.unwrap();
                    let ob = gpu.storage("out", &f32_bytes(&before)).unwrap();
                    let normed = input == MatVecInput::RmsNormedPlusShares;
                    let bind = k
                        .bind_all(
                            &gpu,
                            &MatVecBindings {
                                weights: &wb,
                                x: &xb,
                                out: &ob,
                                dims: &dims,
                                step: &st,
                                caches: None,
                                norm: normed.then_some(&gb),
                                fuse: normed.then_some(&fuse),
                                rope_table: None,
                                bias: None,
                                shares: Some(&sb),
                            },
                        )
                        .unwrap();
                    gpu.run(|p| k.dispatch(p, &bind, rows, n)).unwrap();
                    let got = gpu.read_f32(&ob, 0, n * rows).await.unwrap();
                    let what = format!("{f:?} n={n} {input:?} {output:?} {strategy:?}");
                    match normed {
                        // As normed_products_match_norm_then_product, plus the shares' sums.
                        true => assert_close(&got, &want_in, &mag_in, 2 * cols + heads + 8, &what),
                        false => assert_close(&got, &want_out, &mag_out, cols + heads + 8, &what),
                    }
                }
            }
        }
    }
}
