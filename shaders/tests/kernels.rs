//! Each WGSL kernel against its CPU reference on random inputs of the model's shapes, on
//! whatever adapter is present: natively (lavapipe here) and, through `cargo xtask test`,
//! in headless Chromium (WebGPU on SwiftShader). Timings are printed, never asserted.

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

mod common;

use common::{Rng, gpu_tests, now_ms, say};
use shaders::*;

async fn gpu() -> Gpu {
    common::gpu().await
}

fn random_matrix(rng: &mut Rng, f: WeightFormat, rows: usize, cols: usize) -> Vec<u8> {
    let blocks = rows * cols / 32;
    let mut b = Vec::with_capacity(f.matrix_bytes(rows, cols));
    for _ in 0..blocks {
        match f {
            WeightFormat::Q4_1 => {
                b.extend(rng.half());
                b.extend(rng.half());
                b.extend((0..16).map(|_| rng.next() as u8));
            }
            WeightFormat::Q8_0 => {
                b.extend(rng.half());
                b.extend((0..32).map(|_| rng.next() as u8));
            }
            WeightFormat::F32 => b.extend((0..32).flat_map(|_| rng.f32().to_le_bytes())),
        }
    }
    b
}

/// Runs `W x` for `n` tokens on the GPU; returns the outputs and seconds per product.
async fn gpu_matvec(
    gpu: &Gpu,
    f: WeightFormat,
    w: &[u8],
    (rows, cols, n): (usize, usize, usize),
    x: &[f32],
    reps: usize,
    strategy: MatVecStrategy,
) -> (Vec<f32>, f64) {
    let k = MatVec::with_strategy(gpu, f, strategy).await.unwrap();
    let wb = gpu.storage("w", w).unwrap();
    let xb = gpu.storage("x", &f32_bytes(x)).unwrap();
    let ob = gpu.zeroed("out", n * rows).unwrap();
    let dims = MatVec::dims(gpu, rows, cols, MatVecMode::Write).unwrap();
    let step = Step {
        n: n as u32,
        n_past: 0,
        first: 0,
    }
    .buffer(gpu);
    let bind = k.bind(gpu, &wb, &xb, &ob, &dims, &step);
    gpu.run(|p| k.dispatch(p, &bind, rows, n)).unwrap();
    gpu.read_f32(&ob, 0, 1).await.unwrap();
    let t = now_ms();
    for _ in 0..reps {
        gpu.run(|p| k.dispatch(p, &bind, rows, n)).unwrap();
    }
    let out = gpu.read_f32(&ob, 0, n * rows).await.unwrap();
    (out, (now_ms() - t) / 1e3 / reps.max(1) as f64)
}

/// f32 sums of `cols` products in any order differ from the exact sum by at most
/// `(cols + 8) · 2^-24 · Σ|products|` (the standard bound for recursive summation, with
/// slack for the 8-term partial sums); a wrong weight or index is off by far more.
fn assert_close(got: &[f32], want: &[f32], mag: &[f32], cols: usize, what: &str) {
    assert_eq!(got.len(), want.len());
    let u = (cols as f32 + 8.0) * 2f32.powi(-24);
    let mut worst = 0f32;
    for (i, ((&g, &w), &m)) in got.iter().zip(want).zip(mag).enumerate() {
        let tol = u * m + 1e-30;
        assert!(
            (g - w).abs() <= tol,
            "{what}[{i}]: gpu {g} vs cpu {w} (tolerance {tol})"
        );
        worst = worst.max((g - w).abs() / tol);
    }
    say!("{what}: worst error {worst:.3} of the tolerance");
}

async fn check_matvec(
    gpu: &Gpu,
    adapter: &str,
    rng: &mut Rng,
    f: WeightFormat,
    rows: usize,
    cols: usize,
    n: usize,
    reps: usize,
) {
    let w = random_matrix(rng, f, rows, cols);
    let x: Vec<f32> = (0..n * cols).map(|_| rng.f32()).collect();
    let (want, mag) = matvec_reference(f, &w, rows, cols, &x, n);
    for strategy in [
        MatVecStrategy::InvocationPerRow,
        MatVecStrategy::WorkgroupPerRow,
    ] {
        // The workgroup-per-row variant is slow on CPU adapters: time it once.
        let reps = if strategy == MatVecStrategy::for_gpu(gpu) {
            reps
        } else {
            reps.min(1)
        };
        let (got, secs) = gpu_matvec(gpu, f, &w, (rows, cols, n), &x, reps, strategy).await;
        let what = format!("{f:?} {rows}x{cols} n={n} {strategy:?}");
        assert_close(&got, &want, &mag, cols, &what);
        if reps > 0 {
            say!("{what}: {:.3} ms per product on {adapter}", secs * 1e3);
        }
    }
}

gpu_tests! {
    async fn q4_1_matvec_matches_cpu_at_model_shapes() {
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        check_matvec(&gpu, &adapter, &mut rng, WeightFormat::Q4_1, 1536, 576, 1, 5).await;
        check_matvec(&gpu, &adapter, &mut rng, WeightFormat::Q4_1, 576, 1536, 1, 5).await;
        check_matvec(&gpu, &adapter, &mut rng, WeightFormat::Q4_1, 576, 576, 7, 2).await;
        // Rows not a multiple of anything, one block per row, a batch of 5.
        check_matvec(&gpu, &adapter, &mut rng, WeightFormat::Q4_1, 37, 32, 5, 0).await;
    }

    async fn q8_0_matvec_matches_cpu_including_output_head() {
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        let mut rng = Rng(0x0123_4567_89AB_CDEF);
        check_matvec(&gpu, &adapter, &mut rng, WeightFormat::Q8_0, 49152, 576, 1, 3).await;
        // Odd and even blocks (byte offsets ≡ 0 and 2 mod 4), odd row count, batch.
        check_matvec(&gpu, &adapter, &mut rng, WeightFormat::Q8_0, 101, 96, 6, 0).await;
        check_matvec(&gpu, &adapter, &mut rng, WeightFormat::Q8_0, 3, 32, 1, 0).await;
    }

    async fn f32_matvec_matches_cpu() {
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        let mut rng = Rng(42);
        check_matvec(&gpu, &adapter, &mut rng, WeightFormat::F32, 200, 64, 3, 0).await;
    }

    async fn matvec_modes_accumulate_cache_and_head() {
        let gpu = gpu().await;
        let mut rng = Rng(7);
        let (rows, cols, n) = (40, 64, 3);
        let f = WeightFormat::Q4_1;
        let w = random_matrix(&mut rng, f, rows, cols);
        let x: Vec<f32> = (0..n * cols).map(|_| rng.f32()).collect();
        let (want, _) = matvec_reference(f, &w, rows, cols, &x, n);
        let wb = gpu.storage("w", &w).unwrap();
        let xb = gpu.storage("x", &f32_bytes(&x)).unwrap();
        let step = Step {
            n: n as u32,
            n_past: 2,
            first: 1,
        }
        .buffer(&gpu);
        for strategy in [
            MatVecStrategy::InvocationPerRow,
            MatVecStrategy::WorkgroupPerRow,
        ] {
            let k = MatVec::with_strategy(&gpu, f, strategy).await.unwrap();
            let run = async |mode, init: Vec<f32>| {
                let ob = gpu.storage("out", &f32_bytes(&init)).unwrap();
                let dims = MatVec::dims(&gpu, rows, cols, mode).unwrap();
                let bind = k.bind(&gpu, &wb, &xb, &ob, &dims, &step);
                gpu.run(|p| k.dispatch(p, &bind, rows, n)).unwrap();
                gpu.read_f32(&ob, 0, init.len()).await.unwrap()
            };
            let close = |a: f32, b: f32| (a - b).abs() < 1e-4;
            let acc = run(MatVecMode::Accumulate, vec![1.0; n * rows]).await;
            assert!(acc.iter().zip(&want).all(|(&a, &b)| close(a, b + 1.0)));
            let cache = run(MatVecMode::Cache, vec![-5.0; (n + 2) * rows]).await;
            assert!(cache[..2 * rows].iter().all(|&v| v == -5.0));
            assert!(
                cache[2 * rows..]
                    .iter()
                    .zip(&want)
                    .all(|(&a, &b)| close(a, b))
            );
            let head = run(MatVecMode::Head, vec![-5.0; n * rows]).await;
            assert!(
                head[..2 * rows]
                    .iter()
                    .zip(&want[rows..])
                    .all(|(&a, &b)| close(a, b))
            );
            assert!(head[2 * rows..].iter().all(|&v| v == -5.0));
        }
        assert!(MatVec::dims(&gpu, 4, 33, MatVecMode::Write).is_err());
    }

    async fn get_rows_is_exact_dequantization() {
        let gpu = gpu().await;
        let mut rng = Rng(99);
        for f in [WeightFormat::Q8_0, WeightFormat::Q4_1] {
            let (rows, cols) = (301, 576);
            let w = random_matrix(&mut rng, f, rows, cols);
            let tokens = [0u32, 300, 17, 17, 255];
            let k = GetRows::new(&gpu, f).await.unwrap();
            let wb = gpu.storage("w", &w).unwrap();
            let tb = gpu.storage("tokens", &u32_bytes(&tokens)).unwrap();
            let ob = gpu.zeroed("out", tokens.len() * cols).unwrap();
            let dims = MatVec::dims(&gpu, rows, cols, MatVecMode::Write).unwrap();
            let step = Step {
                n: tokens.len() as u32,
                ..Step::default()
            }
            .buffer(&gpu);
            let bind = k.bind(&gpu, &wb, &tb, &ob, &dims, &step);
            gpu.run(|p| k.dispatch(p, &bind, cols, tokens.len()))
                .unwrap();
            let got = gpu.read_f32(&ob, 0, tokens.len() * cols).await.unwrap();
            for (t, &tok) in tokens.iter().enumerate() {
                let want = f.dequantize_row(&w, tok as usize, cols);
                assert_eq!(
                    &got[t * cols..(t + 1) * cols],
                    &want[..],
                    "{f:?} token {tok}"
                );
            }
        }
    }

    async fn token_mask_matches_cpu() {
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        let k = TokenMask::new(&gpu).await.unwrap();
        let mut rng = Rng(5);
        for (edges, vocab) in [(300usize, 49152usize), (7, 1000), (1, 33), (0, 64), (5, 31)] {
            let words = mask_words(vocab);
            let flags: Vec<u32> = (0..edges)
                .map(|_| rng.next().is_multiple_of(3) as u32)
                .collect();
            let bf: Vec<u32> = (0..edges * words)
                .map(|i| {
                    let w = rng.next() as u32 & rng.next() as u32 & rng.next() as u32;
                    // Bits past the vocabulary stay zero, as the automaton writes them.
                    if i % words == words - 1 && vocab % 32 != 0 {
                        w & ((1u32 << (vocab % 32)) - 1)
                    } else {
                        w
                    }
                })
                .collect();
            let t = now_ms();
            let got = k.compute(&gpu, &flags, &bf, words).await.unwrap();
            let secs = (now_ms() - t) / 1e3;
            assert_eq!(
                got,
                token_mask_reference(&flags, &bf, words),
                "E={edges} V={vocab}"
            );
            if edges == 300 {
                say!(
                    "token mask E=300 V=49152: {:.3} ms including upload and read-back on {adapter}",
                    secs * 1e3
                );
            }
        }
        let all: Vec<u32> = vec![1; 3];
        let bf = vec![1u32, 2, 4];
        assert_eq!(k.compute(&gpu, &all, &bf, 1).await.unwrap(), [7]);
        assert!(k.compute(&gpu, &all, &bf, 2).await.is_err());
    }

    async fn rms_norm_rope_swiglu_match_cpu() {
        let gpu = gpu().await;
        let mut rng = Rng(11);
        let (d, n) = (576, 3);
        let x: Vec<f32> = (0..n * d).map(|_| rng.f32() * 3.0).collect();
        let g: Vec<f32> = (0..d).map(|_| rng.f32()).collect();
        let step = Step {
            n: n as u32,
            n_past: 4,
            first: 0,
        }
        .buffer(&gpu);

        let k = RmsNorm::new(&gpu).await.unwrap();
        let (xb, gb) = (
            gpu.storage("x", &f32_bytes(&x)).unwrap(),
            gpu.storage("g", &f32_bytes(&g)).unwrap(),
        );
        let ob = gpu.zeroed("out", n * d).unwrap();
        let dims = RmsNorm::dims(&gpu, d, 1e-5);
        let bind = k.bind(&gpu, &xb, &gb, &ob, &dims, &step);
        gpu.run(|p| k.dispatch(p, &bind, n)).unwrap();
        let got = gpu.read_f32(&ob, 0, n * d).await.unwrap();
        let want = rms_norm_reference(&x, &g, 1e-5);
        // One f32 sum of 576 squares and a reciprocal square root: relative error < 1e-5.
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| (a - b).abs() <= 1e-5 * b.abs() + 1e-7)
        );

        let (width, hd, n_rot) = (192, 64, 64);
        let table = rope_table(16, n_rot, 100000.0);
        let tb = gpu.storage("table", &f32_bytes(&table)).unwrap();
        let k = Rope::new(&gpu).await.unwrap();
        let rows: Vec<f32> = (0..(4 + n) * width).map(|_| rng.f32()).collect();
        let vb = gpu.storage("v", &f32_bytes(&rows)).unwrap();
        let dims = Rope::dims(&gpu, width, hd, n_rot, true);
        let bind = k.bind(&gpu, &vb, &tb, &dims, &step);
        gpu.run(|p| k.dispatch(p, &bind, width, hd, n_rot, n))
            .unwrap();
        let got = gpu.read_f32(&vb, 0, rows.len()).await.unwrap();
        let mut want = rows.clone();
        rope_reference(&mut want[4 * width..], width, hd, &table, n_rot, 4);
        assert_eq!(&got[..4 * width], &rows[..4 * width]);
        assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() <= 1e-6));

        let k = SwiGlu::new(&gpu).await.unwrap();
        let gate: Vec<f32> = (0..n * 1536).map(|_| rng.f32() * 8.0).collect();
        let up: Vec<f32> = (0..n * 1536).map(|_| rng.f32()).collect();
        let (gb, ub) = (
            gpu.storage("gate", &f32_bytes(&gate)).unwrap(),
            gpu.storage("up", &f32_bytes(&up)).unwrap(),
        );
        let dims = SwiGlu::dims(&gpu, 1536);
        let bind = k.bind(&gpu, &gb, &ub, &dims, &step);
        gpu.run(|p| k.dispatch(p, &bind, 1536, n)).unwrap();
        let got = gpu.read_f32(&gb, 0, gate.len()).await.unwrap();
        let want = swiglu_reference(&gate, &up);
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| (a - b).abs() <= 1e-5 * b.abs() + 1e-6)
        );
    }

    async fn attention_matches_cpu() {
        let gpu = gpu().await;
        let mut rng = Rng(21);
        let s = AttentionShape {
            n_heads: 9,
            n_kv_heads: 3,
            head_dim: 64,
            max_ctx: 200,
        };
        let k = Attention::new(&gpu).await.unwrap();
        for (n_past, n) in [(0usize, 1usize), (0, 5), (130, 1), (70, 3)] {
            let kv_dim = s.n_kv_heads * s.head_dim;
            let q: Vec<f32> = (0..n * s.n_heads * s.head_dim).map(|_| rng.f32()).collect();
            let kc: Vec<f32> = (0..s.max_ctx * kv_dim).map(|_| rng.f32() * 2.0).collect();
            let vc: Vec<f32> = (0..s.max_ctx * kv_dim).map(|_| rng.f32()).collect();
            let qb = gpu.storage("q", &f32_bytes(&q)).unwrap();
            let kb = gpu.storage("k", &f32_bytes(&kc)).unwrap();
            let vb = gpu.storage("v", &f32_bytes(&vc)).unwrap();
            let sc = gpu.zeroed("scores", s.scratch_len(n)).unwrap();
            let ob = gpu.zeroed("out", q.len()).unwrap();
            let dims = Attention::dims(&gpu, &s).unwrap();
            let step = Step {
                n: n as u32,
                n_past: n_past as u32,
                first: 0,
            }
            .buffer(&gpu);
            let bind = k.bind(&gpu, &qb, &kb, &vb, &sc, &ob, &dims, &step);
            gpu.run(|p| k.dispatch(p, &bind, s.n_heads, n)).unwrap();
            let got = gpu.read_f32(&ob, 0, q.len()).await.unwrap();
            let want = attention_reference(&s, &q, &kc, &vc, n_past, n);
            // Outputs are convex combinations of values in [-1, 1]; f32 sums of ≤ 200 terms.
            assert!(
                got.iter().zip(&want).all(|(a, b)| (a - b).abs() <= 2e-5),
                "n_past {n_past}, n {n}"
            );
        }
        let bad = AttentionShape {
            n_heads: 9,
            n_kv_heads: 2,
            head_dim: 64,
            max_ctx: 8,
        };
        assert!(Attention::dims(&gpu, &bad).is_err());
    }

    async fn lost_device_is_an_error_not_a_panic() {
        let gpu = gpu().await;
        let b = gpu.storage("b", &[1, 2, 3, 4]).unwrap();
        assert_eq!(gpu.read_words(&b, 0, 1).await.unwrap(), [0x0403_0201]);
        assert!(
            gpu.read_words(&b, 1, 1).await.is_err(),
            "read past the end"
        );
        gpu.device().destroy();
        let e = gpu.read_words(&b, 0, 1).await.unwrap_err();
        say!("after destroy: {e}");
        assert!(gpu.check().is_err());
        assert!(TokenMask::new(&gpu).await.is_err());
    }
}
