//! Each WGSL kernel against its CPU reference on random inputs of the model's shapes, on
//! whatever adapter is present: natively (lavapipe here) and, through `cargo xtask test`,
//! in headless Chromium (WebGPU on SwiftShader). Timings are printed, never asserted.

use crate::common;

use common::{Rng, gpu_tests, now_ms, say};
use shaders::*;

async fn gpu() -> Gpu {
    common::gpu().await
}

pub(crate) fn random_matrix(rng: &mut Rng, f: WeightFormat, rows: usize, cols: usize) -> Vec<u8> {
    match f {
        WeightFormat::F32 => {
            return (0..rows * cols)
                .flat_map(|_| rng.f32().to_le_bytes())
                .collect();
        }
        // Finite halves; bfloat16s with the exponents of f32s near 1.
        WeightFormat::F16 => return (0..rows * cols).flat_map(|_| rng.half()).collect(),
        WeightFormat::Bf16 => {
            return (0..rows * cols)
                .flat_map(|_| ((rng.f32().to_bits() >> 16) as u16).to_le_bytes())
                .collect();
        }
        _ => {}
    }
    // Random bytes, with finite f16 scales where the format keeps them.
    let mut b = Vec::with_capacity(f.matrix_bytes(rows, cols));
    for _ in 0..rows * cols / f.block_len() {
        let mut block: Vec<u8> = (0..f.block_bytes()).map(|_| rng.next() as u8).collect();
        for &at in f.f16_offsets() {
            block[at..at + 2].copy_from_slice(&rng.half());
        }
        b.extend(block);
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
pub(crate) fn assert_close(got: &[f32], want: &[f32], mag: &[f32], cols: usize, what: &str) {
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
    (gpu, adapter): (&Gpu, &str),
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
    for strategy in common::matvec_strategies(gpu) {
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

/// `attention_matches_cpu` for one shape and cache format, at several (cached, new) token
/// counts. The reference reads the values the cache holds (rounded to f16 for an f16
/// cache), so both formats meet the same bound.
async fn attention_case(
    gpu: &Gpu,
    (k, kv): (&Attention, KvFormat),
    s: &AttentionShape,
    rng: &mut Rng,
) {
    let s = *s;
    let held = |v: f32| match kv {
        KvFormat::F32 => v,
        KvFormat::F16 => common::round_f16(v),
    };
    for (n_past, n) in [(0usize, 1usize), (0, 5), (130, 1), (70, 3)] {
        let kv_dim = s.n_kv_heads * s.head_dim;
        let q: Vec<f32> = (0..n * s.n_heads * s.head_dim).map(|_| rng.f32()).collect();
        let kc: Vec<f32> = (0..s.max_ctx * kv_dim)
            .map(|_| held(rng.f32() * 2.0))
            .collect();
        let vc: Vec<f32> = (0..s.max_ctx * kv_dim).map(|_| held(rng.f32())).collect();
        let qb = gpu.storage("q", &f32_bytes(&q)).unwrap();
        let kb = gpu.storage("k", &common::cache_bytes(kv, &kc)).unwrap();
        let vb = gpu.storage("v", &common::cache_bytes(kv, &vc)).unwrap();
        let sc = gpu.zeroed("scores", s.scratch_len(n)).unwrap();
        let ob = gpu.zeroed("out", q.len()).unwrap();
        let dims = Attention::dims(gpu, &s).unwrap();
        let step = Step {
            n: n as u32,
            n_past: n_past as u32,
            first: 0,
        }
        .buffer(gpu);
        let bind = k.bind(gpu, &qb, &kb, &vb, &sc, &ob, &dims, &step).unwrap();
        gpu.run(|p| k.dispatch(p, &bind, s.n_heads, n)).unwrap();
        let got = gpu.read_f32(&ob, 0, q.len()).await.unwrap();
        let want = attention_reference(&s, &q, &kc, &vc, n_past, n);
        // Outputs are convex combinations of values in [-1, 1]; f32 sums of ≤ 200 terms.
        assert!(
            got.iter().zip(&want).all(|(a, b)| (a - b).abs() <= 2e-5),
            "{s:?} {kv:?}: n_past {n_past}, n {n}"
        );
    }
}

gpu_tests! {
    async fn q4_1_matvec_matches_cpu_at_model_shapes() {
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        check_matvec((&gpu, &adapter), &mut rng, WeightFormat::Q4_1, 1536, 576, 1, 5).await;
        check_matvec((&gpu, &adapter), &mut rng, WeightFormat::Q4_1, 576, 1536, 1, 5).await;
        check_matvec((&gpu, &adapter), &mut rng, WeightFormat::Q4_1, 576, 576, 7, 2).await;
        // Rows not a multiple of anything, one block per row, a batch of 5.
        check_matvec((&gpu, &adapter), &mut rng, WeightFormat::Q4_1, 37, 32, 5, 0).await;
    }

    async fn q8_0_matvec_matches_cpu_including_output_head() {
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        let mut rng = Rng(0x0123_4567_89AB_CDEF);
        check_matvec((&gpu, &adapter), &mut rng, WeightFormat::Q8_0, 49152, 576, 1, 3).await;
        // Odd and even blocks (byte offsets ≡ 0 and 2 mod 4), odd row count, batch.
        check_matvec((&gpu, &adapter), &mut rng, WeightFormat::Q8_0, 101, 96, 6, 0).await;
        check_matvec((&gpu, &adapter), &mut rng, WeightFormat::Q8_0, 3, 32, 1, 0).await;
    }

    // The decoders of Q5_*, F16, BF16 and the K-quants: one vector and a batch; an odd number of
    // 210-byte Q6_K superblocks per row puts every other row at a half-word offset.
    async fn q5_halves_and_k_quant_matvecs_match_cpu() {
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        let mut rng = Rng(0x5EED);
        for f in [
            WeightFormat::Q5_0,
            WeightFormat::Q5_1,
            WeightFormat::F16,
            WeightFormat::Bf16,
            WeightFormat::Q2K,
            WeightFormat::Q3K,
            WeightFormat::Q4K,
            WeightFormat::Q5K,
            WeightFormat::Q6K,
        ] {
            check_matvec((&gpu, &adapter), &mut rng, f, 96, 512, 1, 2).await;
            check_matvec((&gpu, &adapter), &mut rng, f, 37, 256, 5, 0).await;
            check_matvec((&gpu, &adapter), &mut rng, f, 33, 768, 2, 0).await;
        }
    }

    async fn f32_matvec_matches_cpu() {
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        let mut rng = Rng(42);
        check_matvec((&gpu, &adapter), &mut rng, WeightFormat::F32, 200, 64, 3, 0).await;
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
        for strategy in common::matvec_strategies(&gpu) {
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

    // q, k and v stacked into one matrix: q's rows land in q's output, k's and v's in the
    // two caches at the step's offset (positions before it untouched), each as the CPU
    // reference computes them, with both strategies.
    async fn qkv_matvec_splits_rows_into_q_and_the_caches() {
        let gpu = gpu().await;
        let mut rng = Rng(8);
        let (q_rows, kv_rows, cols, n, n_past) = (48, 16, 64, 3, 2);
        let rows = q_rows + 2 * kv_rows;
        let f = WeightFormat::Q8_0;
        let w = random_matrix(&mut rng, f, rows, cols);
        let x: Vec<f32> = (0..n * cols).map(|_| rng.f32()).collect();
        let (want, _) = matvec_reference(f, &w, rows, cols, &x, n);
        let wb = gpu.storage("w", &w).unwrap();
        let xb = gpu.storage("x", &f32_bytes(&x)).unwrap();
        let step = Step {
            n: n as u32,
            n_past: n_past as u32,
            first: 0,
        }
        .buffer(&gpu);
        let dims = MatVec::dims_qkv(&gpu, q_rows, kv_rows, cols).unwrap();
        let close = |a: f32, b: f32| (a - b).abs() < 1e-4;
        for strategy in common::matvec_strategies(&gpu) {
            let k = MatVec::with_output(&gpu, f, strategy, MatVecOutput::Qkv)
                .await
                .unwrap();
            let qb = gpu.zeroed("q", n * q_rows).unwrap();
            let cache = vec![-5.0f32; (n_past + n) * kv_rows];
            let kb = gpu.storage("k", &f32_bytes(&cache)).unwrap();
            let vb = gpu.storage("v", &f32_bytes(&cache)).unwrap();
            let bind = k.bind_qkv(&gpu, &wb, &xb, (&qb, &kb, &vb), &dims, &step);
            gpu.run(|p| k.dispatch(p, &bind, rows, n)).unwrap();
            let q = gpu.read_f32(&qb, 0, n * q_rows).await.unwrap();
            let kc = gpu.read_f32(&kb, 0, cache.len()).await.unwrap();
            let vc = gpu.read_f32(&vb, 0, cache.len()).await.unwrap();
            for t in 0..n {
                let row = &want[t * rows..(t + 1) * rows];
                let at = (n_past + t) * kv_rows;
                let what = format!("{strategy:?} token {t}");
                assert!(q[t * q_rows..][..q_rows].iter().zip(&row[..q_rows]).all(|(&a, &b)| close(a, b)), "q, {what}");
                assert!(kc[at..at + kv_rows].iter().zip(&row[q_rows..q_rows + kv_rows]).all(|(&a, &b)| close(a, b)), "k, {what}");
                assert!(vc[at..at + kv_rows].iter().zip(&row[q_rows + kv_rows..]).all(|(&a, &b)| close(a, b)), "v, {what}");
            }
            assert!(kc[..n_past * kv_rows].iter().chain(&vc[..n_past * kv_rows]).all(|&v| v == -5.0));
        }
    }

    async fn get_rows_is_exact_dequantization() {
        let gpu = gpu().await;
        let mut rng = Rng(99);
        for f in WeightFormat::ALL {
            let cols = if f.block_len() == 256 { 768 } else { 576 };
            let rows = 301;
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
        let before = shaders::dispatches();
        gpu.run(|p| k.dispatch(p, &bind, n)).unwrap();
        // Counted where it is recorded (other tests may dispatch meanwhile: at least one).
        assert!(shaders::dispatches() > before);
        let got = gpu.read_f32(&ob, 0, n * d).await.unwrap();
        let want = rms_norm_reference(&x, &g, 1e-5);
        // One f32 sum of 576 squares and a reciprocal square root: relative error < 1e-5.
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| (a - b).abs() <= 1e-5 * b.abs() + 1e-7)
        );

        let (width, hd, n_rot) = (192, 64, 48);
        let freqs: Vec<f64> = (0..n_rot / 2)
            .map(|i| 100000f64.powf(-2.0 * i as f64 / n_rot as f64))
            .collect();
        let table = rope_table(16, &freqs);
        let tb = gpu.storage("table", &f32_bytes(&table)).unwrap();
        let k = Rope::new(&gpu).await.unwrap();
        for halves in [false, true] {
            let rows: Vec<f32> = (0..(4 + n) * width).map(|_| rng.f32()).collect();
            let vb = gpu.storage("v", &f32_bytes(&rows)).unwrap();
            let dims = Rope::dims(&gpu, width, hd, n_rot, true, halves);
            let bind = k.bind(&gpu, &vb, &tb, &dims, &step);
            gpu.run(|p| k.dispatch(p, &bind, width, hd, n_rot, n))
                .unwrap();
            let got = gpu.read_f32(&vb, 0, rows.len()).await.unwrap();
            let mut want = rows.clone();
            rope_reference(&mut want[4 * width..], width, hd, &table, n_rot, 4, halves);
            assert_eq!(&got[..4 * width], &rows[..4 * width]);
            assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() <= 1e-6));
            // The other pairing is a different rotation: the reference tells them apart.
            let mut other = rows.clone();
            rope_reference(&mut other[4 * width..], width, hd, &table, n_rot, 4, !halves);
            assert!(got.iter().zip(&other).any(|(a, b)| (a - b).abs() > 1e-3));
        }

        let k = HeadNorm::new(&gpu).await.unwrap();
        let (hd, heads) = (32, 6);
        for cache in [false, true] {
            let pos0 = if cache { 4 } else { 0 };
            let rows: Vec<f32> = (0..(4 + n) * hd * heads).map(|_| rng.f32() * 4.0).collect();
            let g: Vec<f32> = (0..hd).map(|_| rng.f32() + 0.5).collect();
            let (vb, gb) = (
                gpu.storage("v", &f32_bytes(&rows)).unwrap(),
                gpu.storage("g", &f32_bytes(&g)).unwrap(),
            );
            let dims = HeadNorm::dims(&gpu, hd, heads, 1e-6, cache);
            let bind = k.bind(&gpu, &vb, &gb, &dims, &step);
            gpu.run(|p| k.dispatch(p, &bind, heads, n)).unwrap();
            let got = gpu.read_f32(&vb, 0, rows.len()).await.unwrap();
            let mut want = rows.clone();
            let w = hd * heads;
            head_norm_reference(&mut want[pos0 * w..(pos0 + n) * w], &g, 1e-6);
            // Rows outside the run are untouched; the run's within RMSNorm's rounding.
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| (a - b).abs() <= 1e-5 * b.abs() + 1e-6),
                "head norm, cache rows: {cache}"
            );
            assert_ne!(got, rows);
        }

        let k = Bias::new(&gpu).await.unwrap();
        for cache in [false, true] {
            let pos0 = if cache { 4 } else { 0 };
            let rows: Vec<f32> = (0..(4 + n) * width).map(|_| rng.f32()).collect();
            let bias: Vec<f32> = (0..width).map(|_| rng.f32()).collect();
            let (vb, bb) = (
                gpu.storage("v", &f32_bytes(&rows)).unwrap(),
                gpu.storage("bias", &f32_bytes(&bias)).unwrap(),
            );
            let dims = Bias::dims(&gpu, width, cache);
            let bind = k.bind(&gpu, &vb, &bb, &dims, &step);
            gpu.run(|p| k.dispatch(p, &bind, width, n)).unwrap();
            let got = gpu.read_f32(&vb, 0, rows.len()).await.unwrap();
            let mut want = rows.clone();
            bias_reference(&mut want[..(pos0 + n) * width], &bias, pos0);
            assert_eq!(got, want, "bias, cache rows: {cache}");
        }

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
        for kv in common::kv_formats(&gpu) {
            let k = Attention::with_cache(&gpu, kv).await.unwrap();
            // SmolLM2's heads (64 wide), wider ones (two passes of 64 dimensions), and widths
            // that are not multiples of 16 or of 4 (the kernel's lanes and unrolled sums).
            for (n_heads, n_kv_heads, head_dim) in [(9, 3, 64), (4, 2, 128), (6, 3, 20), (2, 1, 6)] {
                let s = AttentionShape {
                    n_heads,
                    n_kv_heads,
                    head_dim,
                    max_ctx: 200,
                };
                attention_case(&gpu, (&k, kv), &s, &mut rng).await;
            }
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

/// Both ways of spreading masked sampling over invocations.
const STRATEGIES: [MatVecStrategy; 2] = [
    MatVecStrategy::InvocationPerRow,
    MatVecStrategy::WorkgroupPerRow,
];

/// Inverse-CDF intervals `[lo, hi)` of the kept tokens under the masked softmax, in f64.
fn masked_intervals(logits: &[f32], mask: &[u32]) -> Vec<(u32, f64, f64)> {
    let kept = |t: usize| mask.get(t / 32).is_some_and(|w| (w >> (t % 32)) & 1 == 1);
    let ts: Vec<usize> = (0..logits.len()).filter(|&t| kept(t)).collect();
    let m = ts
        .iter()
        .map(|&t| logits[t] as f64)
        .fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = ts.iter().map(|&t| (logits[t] as f64 - m).exp()).collect();
    let total: f64 = w.iter().sum();
    let mut acc = 0.0;
    ts.iter()
        .zip(&w)
        .map(|(&t, &wi)| {
            let lo = acc / total;
            acc += wi;
            (t as u32, lo, acc / total)
        })
        .collect()
}

/// How far (in u) a GPU draw may land from the exact inverse CDF: f32 tree sums of 16-token
/// chunks, serial sums of at most 64 chunk sums or of the block sums (48 at V = 49152), and
/// WGSL's `exp` (3 + 2|x| ULP) leave a relative error far below 1e-4 of the total mass; a
/// wrong token elsewhere is off by a whole interval.
const U_TOL: f64 = 1e-4;

/// Draws on the GPU at each `u` and checks each token against the CPU reference: equal
/// wherever `u` is farther than [`U_TOL`] from an interval boundary, else a token whose
/// interval is within [`U_TOL`] of `u`. `reference_mask` is what the reference sees (a
/// mutant differs from `mask`). Returns (draws, of which exact) or the first mismatch.
async fn check_masked_draws(
    gpu: &Gpu,
    k: &MaskedSample,
    bind: &MaskedSampleBinding,
    logits: &[f32],
    reference_mask: &[u32],
    us: &[f32],
) -> Result<(usize, usize), String> {
    let iv = masked_intervals(logits, reference_mask);
    let mut exact = 0;
    let mut draws = Vec::with_capacity(us.len());
    for &u in us {
        draws.push(k.draw(gpu, bind, u).await.map_err(|e| e.to_string())?);
    }
    // Tokens first: the inverse CDF.
    for (&u, got) in us.iter().zip(&draws) {
        let want = masked_sample_reference(logits, reference_mask, u).ok_or("reference: none")?;
        let u64 = u as f64;
        let near_boundary = iv
            .iter()
            .any(|&(_, lo, hi)| (u64 - lo).abs() <= U_TOL || (u64 - hi).abs() <= U_TOL);
        if !near_boundary {
            exact += 1;
        }
        if got.token != want.token {
            let ok = near_boundary
                && iv
                    .iter()
                    .any(|&(t, lo, hi)| t == got.token && lo - U_TOL <= u64 && u64 <= hi + U_TOL);
            if !ok {
                return Err(format!(
                    "u = {u}: gpu drew {} but the inverse CDF gives {}",
                    got.token, want.token
                ));
            }
        }
    }
    // Then the masses, and the drawn token's logit (copied, so exactly the input's).
    for (&u, got) in us.iter().zip(&draws) {
        if got.logit.to_bits() != logits[got.token as usize].to_bits() {
            return Err(format!(
                "u = {u}: the drawn token {}'s logit came back as {}, not {}",
                got.token, got.logit, logits[got.token as usize]
            ));
        }
        let want = masked_sample_reference(logits, reference_mask, u).ok_or("reference: none")?;
        let tol = 1e-4 * want.log_all.abs().max(1.0);
        for (what, g, w) in [
            ("log Z", got.log_z, want.log_z),
            ("log kept", got.log_kept, want.log_kept),
            ("log all", got.log_all, want.log_all),
        ] {
            if (g - w).abs() > tol {
                return Err(format!("u = {u}: {what} gpu {g} vs cpu {w}"));
            }
        }
    }
    Ok((us.len(), exact))
}

/// The `u` values of a check: 0, the largest f32 below 1, the midpoint of every kept
/// token's interval wider than 4·U_TOL (at most 400 of them), and 100 seeded uniforms.
fn draw_points(rng: &mut Rng, iv: &[(u32, f64, f64)]) -> Vec<f32> {
    let mut us = vec![0.0, 1.0 - f32::EPSILON / 2.0];
    us.extend(
        iv.iter()
            .filter(|&&(_, lo, hi)| hi - lo > 4.0 * U_TOL)
            .take(400)
            .map(|&(_, lo, hi)| ((lo + hi) / 2.0) as f32),
    );
    us.extend((0..100).map(|_| (rng.next() >> 40) as f32 / (1u64 << 24) as f32));
    us
}

/// Logits like a language model's: a broad base and a few sharp peaks.
fn lm_like_logits(rng: &mut Rng, vocab: usize) -> Vec<f32> {
    (0..vocab)
        .map(|_| {
            let base = (rng.f32() + rng.f32() + rng.f32()) * 2.0;
            if rng.next().is_multiple_of(500) {
                base + 9.0 + 4.0 * rng.f32()
            } else {
                base
            }
        })
        .collect()
}

gpu_tests! {
    async fn masked_sample_follows_the_masked_distribution() {
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        for strategy in STRATEGIES {
        let k = MaskedSample::with_strategy(&gpu, strategy).await.unwrap();
        let mut rng = Rng(31);
        // (vocabulary, fraction kept): one block, a ragged last word with bits set past the
        // vocabulary, several blocks, the model's vocabulary.
        for (vocab, keep) in [(37usize, 3u64), (1000, 2), (3000, 5), (49152, 3)] {
            let logits = lm_like_logits(&mut rng, vocab);
            let mut mask: Vec<u32> = (0..mask_words(vocab))
                .map(|_| {
                    (0..32).fold(0u32, |m, b| m | (u32::from(rng.next().is_multiple_of(keep)) << b))
                })
                .collect();
            if vocab == 3000 {
                // Only the first token of block 0 and tokens of the last block: the search
                // crosses empty blocks.
                mask.iter_mut().enumerate().for_each(|(w, m)| {
                    *m = match w {
                        0 => 1,
                        w if w >= 64 => *m,
                        _ => 0,
                    }
                });
            }
            // The highest logit is masked out, so Z is well below 1.
            let top = (0..vocab).max_by(|&a, &b| logits[a].total_cmp(&logits[b])).unwrap();
            mask[top / 32] &= !(1 << (top % 32));
            let lb = gpu.storage("logits", &f32_bytes(&logits)).unwrap();
            let mb = gpu.storage("mask", &u32_bytes(&mask)).unwrap();
            let bind = k.bind(&gpu, &lb, 0, &mb, vocab).unwrap();
            let iv = masked_intervals(&logits, &mask);
            let us = draw_points(&mut rng, &iv);
            k.draw(&gpu, &bind, 0.5).await.unwrap(); // warm-up: pipelines compile on first use
            let t = now_ms();
            let (n, exact) = check_masked_draws(&gpu, &k, &bind, &logits, &mask, &us)
                .await
                .unwrap_or_else(|e| panic!("V={vocab}: {e}"));
            let ms = (now_ms() - t) / n as f64;
            assert!(exact * 10 >= n * 9, "V={vocab}: only {exact} of {n} draws away from boundaries");
            say!(
                "masked sample {strategy:?} V={vocab}: {n} draws ({exact} exact) equal the \
                 inverse CDF; {ms:.3} ms per draw (two passes, 16 bytes read back) on {adapter}"
            );
            if vocab == 37 {
                // Bits past the vocabulary are ignored; the widest interval is required.
                let wide = iv.iter().max_by(|a, b| (a.2 - a.1).total_cmp(&(b.2 - b.1))).unwrap();
                let got = k.draw(&gpu, &bind, ((wide.1 + wide.2) / 2.0) as f32).await.unwrap();
                assert_eq!(got.token, wide.0);
            }
        }
        }
    }

    async fn masked_sample_comparison_can_fail() {
        // A mutant reference (one kept token dropped from its mask) disagrees with the GPU
        // draw at that token's interval: the check is not vacuous.
        let gpu = gpu().await;
        let k = MaskedSample::new(&gpu).await.unwrap();
        let mut rng = Rng(8);
        let vocab = 2048;
        let logits = lm_like_logits(&mut rng, vocab);
        let mask: Vec<u32> = (0..mask_words(vocab)).map(|_| rng.next() as u32).collect();
        let lb = gpu.storage("logits", &f32_bytes(&logits)).unwrap();
        let mb = gpu.storage("mask", &u32_bytes(&mask)).unwrap();
        let bind = k.bind(&gpu, &lb, 0, &mb, vocab).unwrap();
        let iv = masked_intervals(&logits, &mask);
        let us = draw_points(&mut rng, &iv);
        assert!(check_masked_draws(&gpu, &k, &bind, &logits, &mask, &us).await.is_ok());
        let wide = iv.iter().max_by(|a, b| (a.2 - a.1).total_cmp(&(b.2 - b.1))).unwrap().0;
        let mut mutant = mask.clone();
        mutant[wide as usize / 32] &= !(1 << (wide % 32));
        let e = check_masked_draws(&gpu, &k, &bind, &logits, &mutant, &us).await.unwrap_err();
        assert!(e.contains("drew"), "the mutant is caught by the draws: {e}");
        say!("mutant caught: {e}");
    }

    async fn mask_kernel_feeds_masked_sample_on_the_gpu() {
        // The mask stays on the GPU: the token-mask kernel writes it, masked sampling reads
        // it in the same submission, 16 bytes come back.
        let gpu = gpu().await;
        let adapter = common::adapter_description(&gpu).await;
        let tm = TokenMask::new(&gpu).await.unwrap();
        for strategy in STRATEGIES {
        let ms = MaskedSample::with_strategy(&gpu, strategy).await.unwrap();
        let mut rng = Rng(77);
        let (edges, vocab) = (40usize, 49152usize);
        let words = mask_words(vocab);
        let flags: Vec<u32> = (0..edges).map(|e| u32::from(e % 3 == 0)).collect();
        let bf: Vec<u32> = (0..edges * words)
            .map(|_| rng.next() as u32 & rng.next() as u32 & rng.next() as u32)
            .collect();
        let logits = lm_like_logits(&mut rng, vocab);
        let (fb, bb) = (
            gpu.storage("flags", &u32_bytes(&flags)).unwrap(),
            gpu.storage("bf", &u32_bytes(&bf)).unwrap(),
        );
        let mb = gpu.zeroed("mask", words).unwrap();
        let dims = TokenMask::dims(&gpu, edges, words);
        let tbind = tm.bind(&gpu, &fb, &bb, &mb, &dims);
        let lb = gpu.storage("logits", &f32_bytes(&logits)).unwrap();
        let sbind = ms.bind(&gpu, &lb, 0, &mb, vocab).unwrap();
        let mask = token_mask_reference(&flags, &bf, words);
        // A warm-up step (pipelines are compiled on first use), then timed steps.
        ms.set_u(&gpu, &sbind, 0.5).unwrap();
        gpu.run(|p| {
            tm.dispatch(p, &tbind, words);
            ms.dispatch(p, &sbind);
        })
        .unwrap();
        ms.read(&gpu, &sbind).await.unwrap();
        let mut total = 0.0;
        for u in [0.0f32, 0.25, 0.5, 0.75, 0.999] {
            ms.set_u(&gpu, &sbind, u).unwrap();
            let t = now_ms();
            gpu.run(|p| {
                tm.dispatch(p, &tbind, words);
                ms.dispatch(p, &sbind);
            })
            .unwrap();
            let got = ms.read(&gpu, &sbind).await.unwrap();
            total += now_ms() - t;
            let want = masked_sample_reference(&logits, &mask, u).unwrap();
            let iv = masked_intervals(&logits, &mask);
            let (_, lo, hi) = *iv.iter().find(|x| x.0 == got.token).expect("a kept token");
            assert!(
                got.token == want.token || (lo - U_TOL..=hi + U_TOL).contains(&(u as f64)),
                "u = {u}: gpu {} vs cpu {}",
                got.token,
                want.token
            );
            assert!((got.log_z - want.log_z).abs() < 1e-3, "{} vs {}", got.log_z, want.log_z);
        }
        say!(
            "mask (E={edges}) + masked sample {strategy:?} V={vocab}: {:.3} ms per step \
             (one submission, 20 bytes read back) on {adapter}",
            total / 5.0
        );
        }
    }

    async fn masked_sample_bad_input_is_an_error() {
        let gpu = gpu().await;
        for strategy in STRATEGIES {
        let k = MaskedSample::with_strategy(&gpu, strategy).await.unwrap();
        let logits = [0.5f32, 1.0, -2.0, 3.0, 0.0];
        // Nothing kept, or only bits past the vocabulary: a clear error, no hang.
        for mask in [[0u32], [0xFFFF_FFE0]] {
            assert_eq!(masked_sample_reference(&logits, &mask, 0.5), None);
            let e = k.compute(&gpu, &logits, &mask, 0.5).await.unwrap_err();
            assert_eq!(e, GpuError::AllMasked);
            assert!(e.to_string().contains("keeps no token"), "{e}");
        }
        for u in [1.0f32, -0.1, f32::NAN] {
            assert!(k.compute(&gpu, &logits, &[1], u).await.is_err(), "u = {u}");
        }
        assert!(k.compute(&gpu, &[0.0, f32::NAN], &[3], 0.5).await.is_err());
        assert!(k.compute(&gpu, &[], &[], 0.5).await.is_err());
        let lb = gpu.storage("logits", &f32_bytes(&[0.0; 64])).unwrap();
        let mb = gpu.storage("mask", &u32_bytes(&[1])).unwrap();
        assert!(k.bind(&gpu, &lb, 0, &mb, 64).is_err(), "mask too short");
        assert!(k.bind(&gpu, &lb, 1, &mb, 64).is_err(), "logits too short");
        // One kept token: always that token, log Z its log-softmax.
        let d = k.compute(&gpu, &logits, &[0b1000], 0.9).await.unwrap();
        assert_eq!(d.token, 3);
        let want = masked_sample_reference(&logits, &[0b1000], 0.9).unwrap();
        assert!((d.log_z - want.log_z).abs() < 1e-5);
        }
    }
}
