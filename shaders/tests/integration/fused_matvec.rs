//! The fused products ([`MatVecInput::RmsNormed`], [`MatVecOutput::QkvRope`] with f32 and
//! f16 caches,
//! [`MatVecOutput::SwiGlu`]) against the unfused CPU references run one after another:
//! norm then product, product then bias then RoPE, product then SwiGLU; both strategies,
//! every weight format for the norm, both RoPE pairings with partial rotation.

use crate::common;
use crate::kernels::{assert_close, random_matrix};

use common::{Rng, gpu_tests};
use shaders::*;

const EPS: f32 = 1e-5;

fn step(gpu: &Gpu, n: usize, n_past: usize, first: usize) -> wgpu::Buffer {
    Step {
        n: n as u32,
        n_past: n_past as u32,
        first: first as u32,
    }
    .buffer(gpu)
}

/// The magnitudes `assert_close` scales its bound by, widened for a cache that rounds
/// each value to f16 after the f32 sums: half an f16 ulp of the value (relative 2⁻¹¹,
/// or 2⁻²⁵ absolute among f16's subnormals) on top of the f32 bound.
fn cache_rounding(kv: KvFormat, want: &[f32], mag: &[f32], terms: usize) -> Vec<f32> {
    let u = (terms as f32 + 8.0) * 2f32.powi(-24);
    mag.iter()
        .zip(want)
        .map(|(&m, &w)| match kv {
            KvFormat::F32 => m,
            KvFormat::F16 => m + ((w.abs() + u * m) * 2f32.powi(-11) + 2f32.powi(-25)) / u,
        })
        .collect()
}

/// `(x, g)`: `n` vectors of `cols` in [-scale, scale] and norm weights in [0.5, 1.5).
fn norm_inputs(rng: &mut Rng, n: usize, cols: usize, scale: f32) -> (Vec<f32>, Vec<f32>) {
    let x = (0..n * cols).map(|_| scale * rng.f32()).collect();
    let g = (0..cols).map(|_| 1.0 + 0.5 * rng.f32()).collect();
    (x, g)
}

/// The input the unfused pass multiplies: `x` itself or its RMSNorm with weights `g`.
fn input_of(input: MatVecInput, x: &[f32], g: &[f32]) -> Vec<f32> {
    match input {
        MatVecInput::Vectors => x.to_vec(),
        MatVecInput::RmsNormed => rms_norm_reference(x, g, EPS),
        MatVecInput::RmsNormedPlusShares => unreachable!("folded_output.rs tests it"),
    }
}

gpu_tests! {
    // Every format, both strategies, in the three modes a normed input is used in (the
    // q/gate/up products write, the output head from `first`, accumulating for a check
    // that the mode bits still hold).
    async fn normed_products_match_norm_then_product() {
        let gpu = common::gpu().await;
        let mut rng = Rng(31);
        let (rows, cols) = (40, 512);
        for f in WeightFormat::ALL {
            let w = random_matrix(&mut rng, f, rows, cols);
            let wb = gpu.storage("w", &w).unwrap();
            // The last case's x is so small that eps dominates its norm (a wrong eps fails).
            for (n, mode, first, scale) in [
                (1, MatVecMode::Write, 0, 3.0),
                (5, MatVecMode::Accumulate, 0, 3.0),
                (6, MatVecMode::Head, 3, 3.0),
                (2, MatVecMode::Write, 0, 1e-3),
            ] {
                let (x, g) = norm_inputs(&mut rng, n, cols, scale);
                let h = rms_norm_reference(&x, &g, EPS);
                let (mut want, mag) = matvec_reference(f, &w, rows, cols, &h, n);
                let before = vec![0.25f32; n * rows];
                if mode == MatVecMode::Accumulate {
                    want.iter_mut().for_each(|v| *v += 0.25);
                }
                if mode == MatVecMode::Head {
                    want.drain(..first * rows);
                }
                let xb = gpu.storage("x", &f32_bytes(&x)).unwrap();
                let gb = gpu.storage("g", &f32_bytes(&g)).unwrap();
                let dims = MatVec::dims(&gpu, rows, cols, mode).unwrap();
                let fuse = MatVec::fuse_dims(&gpu, EPS, 2, 0, false).unwrap();
                let st = step(&gpu, n, 0, first);
                for strategy in common::matvec_strategies(&gpu) {
                    let k = MatVec::fused(&gpu, f, strategy, MatVecInput::RmsNormed, MatVecOutput::One)
                        .await
                        .unwrap();
                    let ob = gpu.storage("out", &f32_bytes(&before)).unwrap();
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
                                norm: Some(&gb),
                                fuse: Some(&fuse),
                                rope_table: None,
                                bias: None,
                                shares: None,
                            },
                        )
                        .unwrap();
                    let tokens = if mode == MatVecMode::Head { n - first } else { n };
                    gpu.run(|p| k.dispatch(p, &bind, rows, tokens)).unwrap();
                    let got = gpu.read_f32(&ob, 0, want.len()).await.unwrap();
                    let mag = &mag[mag.len() - want.len()..];
                    let what = format!("normed {f:?} n={n} {mode:?} {strategy:?}");
                    // The norm's scale multiplies the sum instead of each input: twice the
                    // rounding room of a plain product.
                    assert_close(&got, &want, mag, 2 * cols + 8, &what);
                }
            }
        }
    }

    // Stacked q, k, v with bias and RoPE on the way out, against product, bias, RoPE in
    // turn: adjacent and halves pairings, whole and partial rotation, grouped heads, with
    // and without a normed input; q lands in its output, k and v in the caches at the
    // step's offset, earlier positions untouched.
    async fn qkv_rope_matches_product_then_bias_then_rope() {
        let gpu = common::gpu().await;
        let mut rng = Rng(57);
        let n_past = 2usize;
        // Each strategy with each cache format the device has.
        let formats = common::kv_formats(&gpu);
        let shapes = [
            // (format, cols, heads, kv heads, head_dim, n_rot, halves)
            (WeightFormat::Q8_0, 64, 4, 2, 16, 16, false),
            (WeightFormat::Q8_0, 64, 4, 2, 16, 16, true),
            (WeightFormat::Q4K, 256, 2, 1, 64, 32, true),
            (WeightFormat::Q4_1, 96, 3, 3, 32, 8, false),
        ];
        // One token (the single-token loop of the invocation-per-row form), three, and six
        // (a second group of four tokens along z).
        for ((f, cols, heads, kv_heads, hd, n_rot, halves), n) in shapes.into_iter().zip([1usize, 3, 6, 6]) {
            let (q_rows, kv_rows) = (heads * hd, kv_heads * hd);
            let rows = q_rows + 2 * kv_rows;
            let w = random_matrix(&mut rng, f, rows, cols);
            let bias: Vec<f32> = (0..rows).map(|_| rng.f32()).collect();
            let freqs: Vec<f64> =
                (0..n_rot / 2).map(|i| 10000f64.powf(-2.0 * i as f64 / n_rot as f64)).collect();
            let table = rope_table(n_past + n, &freqs);
            let (x, g) = norm_inputs(&mut rng, n, cols, 3.0);
            let wb = gpu.storage("w", &w).unwrap();
            let xb = gpu.storage("x", &f32_bytes(&x)).unwrap();
            let gb = gpu.storage("g", &f32_bytes(&g)).unwrap();
            let bb = gpu.storage("bias", &f32_bytes(&bias)).unwrap();
            let tb = gpu.storage("rope", &f32_bytes(&table)).unwrap();
            let dims = MatVec::dims_qkv(&gpu, q_rows, kv_rows, cols).unwrap();
            let fuse = MatVec::fuse_dims(&gpu, EPS, hd, n_rot, halves).unwrap();
            let st = step(&gpu, n, n_past, 0);
            for input in [MatVecInput::Vectors, MatVecInput::RmsNormed] {
                let h = input_of(input, &x, &g);
                let (prod, mag) = matvec_reference(f, &w, rows, cols, &h, n);
                // Reference: bias, then RoPE over q's and k's rows of each token.
                let (mut q, mut k, mut v) = (Vec::new(), Vec::new(), Vec::new());
                let (mut q_mag, mut k_mag, mut v_mag) = (Vec::new(), Vec::new(), Vec::new());
                for t in 0..n {
                    let row: Vec<f32> =
                        prod[t * rows..][..rows].iter().zip(&bias).map(|(p, b)| p + b).collect();
                    let m: Vec<f32> = mag[t * rows..][..rows]
                        .iter()
                        .zip(&bias)
                        .map(|(m, b)| m + b.abs())
                        .collect();
                    q.extend_from_slice(&row[..q_rows]);
                    k.extend_from_slice(&row[q_rows..q_rows + kv_rows]);
                    v.extend_from_slice(&row[q_rows + kv_rows..]);
                    q_mag.extend_from_slice(&m[..q_rows]);
                    k_mag.extend_from_slice(&m[q_rows..q_rows + kv_rows]);
                    v_mag.extend_from_slice(&m[q_rows + kv_rows..]);
                }
                rope_reference(&mut q, q_rows, hd, &table, n_rot, n_past, halves);
                rope_reference(&mut k, kv_rows, hd, &table, n_rot, n_past, halves);
                // A turned value mixes two rows: room for both rows' errors.
                let partner = |i: usize| match (i < n_rot, halves) {
                    (false, _) => i,
                    (true, true) => (i + n_rot / 2) % n_rot,
                    (true, false) => i ^ 1,
                };
                let pair_mag = |m: &[f32]| -> Vec<f32> {
                    m.chunks(hd)
                        .flat_map(|h| (0..hd).map(|i| h[i] + h[partner(i)]).collect::<Vec<_>>())
                        .collect()
                };
                let strategies = common::matvec_strategies(&gpu);
                let cases = strategies
                    .iter()
                    .flat_map(|&s| formats.iter().map(move |&kv| (s, kv)));
                for (strategy, kv) in cases {
                    let output = MatVecOutput::QkvRope(kv);
                    let kernel = MatVec::fused(&gpu, f, strategy, input, output).await.unwrap();
                    let qb = gpu.zeroed("q", n * q_rows).unwrap();
                    let cache = vec![-5.0f32; (n_past + n) * kv_rows];
                    let kb = gpu.storage("k", &common::cache_bytes(kv, &cache)).unwrap();
                    let vb = gpu.storage("v", &common::cache_bytes(kv, &cache)).unwrap();
                    let bind = kernel
                        .bind_all(
                            &gpu,
                            &MatVecBindings {
                                weights: &wb,
                                x: &xb,
                                out: &qb,
                                dims: &dims,
                                step: &st,
                                caches: Some((&kb, &vb)),
                                norm: (input == MatVecInput::RmsNormed).then_some(&gb),
                                fuse: Some(&fuse),
                                rope_table: Some(&tb),
                                bias: Some(&bb),
                                shares: None,
                            },
                        )
                        .unwrap();
                    gpu.run(|p| kernel.dispatch(p, &bind, rows, n)).unwrap();
                    let got_q = gpu.read_f32(&qb, 0, n * q_rows).await.unwrap();
                    let kc = common::read_cache(&gpu, kv, &kb, cache.len()).await;
                    let vc = common::read_cache(&gpu, kv, &vb, cache.len()).await;
                    let what = format!(
                        "{f:?} heads {heads}/{kv_heads}x{hd} n_rot {n_rot} halves {halves} {input:?} {strategy:?} {kv:?} cache"
                    );
                    let at = n_past * kv_rows;
                    let terms = 2 * cols + 8;
                    assert_close(&got_q, &q, &pair_mag(&q_mag), terms, &format!("q, {what}"));
                    let (k_tol, v_tol) = (
                        cache_rounding(kv, &k, &pair_mag(&k_mag), terms),
                        cache_rounding(kv, &v, &v_mag, terms),
                    );
                    assert_close(&kc[at..], &k, &k_tol, terms, &format!("k, {what}"));
                    assert_close(&vc[at..], &v, &v_tol, terms, &format!("v, {what}"));
                    assert!(
                        kc[..at].iter().chain(&vc[..at]).all(|&v| v == -5.0),
                        "earlier cache positions written, {what}"
                    );
                }
            }
        }
    }

    // Gate and up stacked, silu(gate) · up on the way out, against product then SwiGLU,
    // for one token and several, with and without a normed input.
    async fn swiglu_product_matches_product_then_swiglu() {
        let gpu = common::gpu().await;
        let mut rng = Rng(73);
        let (ff, cols) = (96, 256);
        for f in [WeightFormat::Q8_0, WeightFormat::Q6K, WeightFormat::F16] {
            let w = random_matrix(&mut rng, f, 2 * ff, cols);
            let wb = gpu.storage("w", &w).unwrap();
            for n in [1usize, 6] {
                let (x, g) = norm_inputs(&mut rng, n, cols, 3.0);
                let xb = gpu.storage("x", &f32_bytes(&x)).unwrap();
                let gb = gpu.storage("g", &f32_bytes(&g)).unwrap();
                let dims = MatVec::dims(&gpu, 2 * ff, cols, MatVecMode::Write).unwrap();
                let fuse = MatVec::fuse_dims(&gpu, EPS, 2, 0, false).unwrap();
                let st = step(&gpu, n, 0, 0);
                for input in [MatVecInput::Vectors, MatVecInput::RmsNormed] {
                    let h = input_of(input, &x, &g);
                    let (prod, mag) = matvec_reference(f, &w, 2 * ff, cols, &h, n);
                    let (mut want, mut tol_mag) = (Vec::new(), Vec::new());
                    for t in 0..n {
                        let (gate, up) = prod[t * 2 * ff..][..2 * ff].split_at(ff);
                        let (gm, um) = mag[t * 2 * ff..][..2 * ff].split_at(ff);
                        want.extend(swiglu_reference(gate, up));
                        // d silu / d gate is at most 1.1: the gate's error times |up|, the
                        // up's error times |silu(gate)| (at most |gate| + 0.28).
                        tol_mag.extend((0..ff).map(|i| {
                            1.1 * up[i].abs() * gm[i] + (gate[i].abs() + 0.28) * um[i] + 1e-3
                        }));
                    }
                    for strategy in common::matvec_strategies(&gpu) {
                        let k = MatVec::fused(&gpu, f, strategy, input, MatVecOutput::SwiGlu)
                            .await
                            .unwrap();
                        let ob = gpu.zeroed("out", n * ff).unwrap();
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
                                    norm: (input == MatVecInput::RmsNormed).then_some(&gb),
                                    fuse: (input == MatVecInput::RmsNormed).then_some(&fuse),
                                    rope_table: None,
                                    bias: None,
                                    shares: None,
                                },
                            )
                            .unwrap();
                        gpu.run(|p| k.dispatch(p, &bind, 2 * ff, n)).unwrap();
                        let got = gpu.read_f32(&ob, 0, n * ff).await.unwrap();
                        let what = format!("swiglu {f:?} n={n} {input:?} {strategy:?}");
                        assert_close(&got, &want, &tol_mag, 2 * cols + 8, &what);
                    }
                }
            }
        }
    }

    // A fused kernel bound without a buffer its input or output reads is refused by name.
    async fn fused_bindings_name_what_is_missing() {
        let gpu = common::gpu().await;
        let f = WeightFormat::Q8_0;
        let k = MatVec::fused(&gpu, f, MatVecStrategy::InvocationPerRow, MatVecInput::RmsNormed, MatVecOutput::QkvRope(KvFormat::F32))
            .await
            .unwrap();
        let b = gpu.zeroed("b", 64).unwrap();
        let dims = MatVec::dims_qkv(&gpu, 32, 16, 32).unwrap();
        let full = MatVecBindings {
            weights: &b,
            x: &b,
            out: &b,
            dims: &dims,
            step: &dims,
            caches: Some((&b, &b)),
            norm: Some(&b),
            fuse: Some(&dims),
            rope_table: Some(&b),
            bias: Some(&b),
            shares: None,
        };
        for (bindings, missing) in [
            (MatVecBindings { norm: None, ..full }, "norm"),
            (MatVecBindings { rope_table: None, ..full }, "RoPE table"),
            (MatVecBindings { caches: None, ..full }, "caches"),
            (MatVecBindings { bias: None, ..full }, "biases"),
        ] {
            let e = k.bind_all(&gpu, &bindings).unwrap_err().to_string();
            assert!(e.contains(missing), "{e}");
        }
        let add = MatVec::fused(&gpu, f, MatVecStrategy::InvocationPerRow, MatVecInput::Vectors, MatVecOutput::AddShares)
            .await
            .unwrap();
        let e = add.bind_all(&gpu, &full).unwrap_err().to_string();
        assert!(e.contains("shares"), "{e}");
        // Pairs that would read the shares twice or mistake q's rows for their count.
        for output in [MatVecOutput::AddShares, MatVecOutput::QkvRope(KvFormat::F32)] {
            let refused = MatVec::fused(&gpu, f, MatVecStrategy::InvocationPerRow, MatVecInput::RmsNormedPlusShares, output).await;
            assert!(refused.is_err(), "{output:?}");
        }
        assert!(MatVec::dims_shares(&gpu, 32, 32, MatVecMode::Head, 2).is_err());
        assert!(MatVec::fuse_dims(&gpu, EPS, 64, 66, false).is_err());
        assert!(MatVec::fuse_dims(&gpu, EPS, 63, 32, true).is_err());
    }
}
