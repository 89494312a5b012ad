//! The GPU forward pass against the CPU one (itself checked against llama.cpp) on the real
//! SmolLM2-135M-Instruct Q4_1 file, on whatever adapter is present (lavapipe natively).
//! Run with `VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json` where there is
//! no GPU.

use lm::Model;
use lm::gguf::{GgmlType, dequantize_q4_1, dequantize_q8_0};
use lm::gpu::{
    DecodeMask, GpuModel, GpuOptions, GpuPromptedModel, MaskedDecoder, masked_decode_reference,
};
use sampler_core::{
    ByteAutomaton, LanguageModel, Limits, RegexAutomaton, SeededRng, TensorizedAutomaton, TokenId,
    block_on,
};
use shaders::{Gpu, KvFormat, WeightFormat};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

fn model() -> Model {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../assets/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    Model::load(&p).unwrap_or_else(|e| panic!("{e}"))
}

fn gpu() -> Arc<Gpu> {
    Arc::new(block_on(Gpu::new()).unwrap_or_else(|e| panic!("{e}")))
}

/// Logits are sums over 30 blocks of f32 products whose order differs between the CPU
/// (sequential per row, threads by rows) and the GPU (8-weight units, per-row loops or
/// tree reductions), and the GPU's RMSNorm sums squares in f32 where the CPU uses f64.
/// Relative rounding of ~1e-6 per operation grows through the residual stream to about
/// a few 1e-5 of the logits' range (|logit| ≲ 30; measured on lavapipe: at most 1e-4 at
/// 34 positions). 0.01 absolute leaves a wide margin, while a wrong kernel (a swapped
/// nibble, a missed RoPE pair, an off-by-one position) moves logits by whole units.
const LOGIT_TOLERANCE: f32 = 0.01;

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn argmax(v: &[f32]) -> usize {
    v.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &x)| {
            if x > bv { (i, x) } else { (bi, bv) }
        })
        .0
}

/// The shaders crate's block decoders agree with `lm`'s scalar dequantizers (the tested
/// source of truth) on real rows of the file.
#[test]
fn shader_block_layout_matches_lm_dequantizer() {
    let m = model();
    let g = m.gguf();
    for name in [
        "blk.0.ffn_down.weight",
        "blk.29.attn_q.weight",
        "token_embd.weight",
    ] {
        let t = g.tensor(name).unwrap();
        let (rows, cols) = (t.dims[1] as usize, t.dims[0] as usize);
        let bytes = &m.bytes()[t.range()];
        let (format, rb) = match t.ty {
            GgmlType::Q4_1 => (WeightFormat::Q4_1, cols / 32 * 20),
            GgmlType::Q8_0 => (WeightFormat::Q8_0, cols / 32 * 34),
            other => panic!("{name}: unexpected {other:?}"),
        };
        for row in [0, 1, rows / 2, rows - 1] {
            let mut want = vec![0f32; cols];
            let data = &bytes[row * rb..(row + 1) * rb];
            match format {
                WeightFormat::Q4_1 => dequantize_q4_1(data, &mut want),
                _ => dequantize_q8_0(data, &mut want),
            }
            assert_eq!(
                format.dequantize_row(bytes, row, cols),
                want,
                "{name} row {row}"
            );
        }
    }
}

#[test]
fn gpu_logits_match_cpu_and_decode_speed() {
    let m = model();
    let gpu = gpu();
    let t = Instant::now();
    let mut gm = block_on(GpuModel::with_gpu(gpu.clone(), &m, 256)).unwrap();
    eprintln!(
        "GpuModel on {}: {} weight bytes, {} buffer bytes in all (file {} bytes), built in {:.2} s",
        gpu.adapter_name(),
        gm.weight_bytes(),
        gm.buffer_bytes(),
        m.bytes().len(),
        t.elapsed().as_secs_f64()
    );
    assert!(gm.weight_bytes() < m.bytes().len() as u64 + (1 << 20));
    let tok = m.tokenizer();
    let prompts = [
        tok.encode_prompt("Name a colour.", true).unwrap(),
        tok.encode("The capital of France is").unwrap(),
        vec![1],
    ];
    let vocab = m.config().vocab_size;
    for p in &prompts {
        gm.truncate(0);
        let got = block_on(gm.forward(p, 0)).unwrap();
        let mut cache = m.new_cache();
        let want = m.forward(&mut cache, p, 0).unwrap();
        let diff = max_diff(&got, &want);
        eprintln!(
            "prompt of {} tokens: max |Δlogit| {diff:.5} over all positions",
            p.len()
        );
        assert!(diff <= LOGIT_TOLERANCE, "{diff}");
        for (i, (g, w)) in got.chunks(vocab).zip(want.chunks(vocab)).enumerate() {
            assert_eq!(argmax(g), argmax(w), "top-1 at position {i}");
        }
    }

    // Greedy decode: GPU and CPU token by token; same tokens, close logits; speed.
    let prompt = &prompts[0];
    gm.truncate(0);
    let mut cache = m.new_cache();
    let mut g_last = block_on(gm.forward(prompt, prompt.len() - 1)).unwrap();
    let mut c_last = m.forward(&mut cache, prompt, prompt.len() - 1).unwrap();
    let steps = 8;
    let (mut g_secs, mut c_secs) = (0.0, 0.0);
    for _ in 0..steps {
        let next = argmax(&c_last) as TokenId;
        assert_eq!(argmax(&g_last) as TokenId, next);
        let t = Instant::now();
        g_last = block_on(gm.forward(&[next], 0)).unwrap();
        g_secs += t.elapsed().as_secs_f64();
        let t = Instant::now();
        c_last = m.forward(&mut cache, &[next], 0).unwrap();
        c_secs += t.elapsed().as_secs_f64();
        assert!(max_diff(&g_last, &c_last) <= LOGIT_TOLERANCE);
    }
    eprintln!(
        "decode: GPU ({}) {:.2} tokens/s, CPU {:.2} tokens/s",
        gpu.adapter_name(),
        steps as f64 / g_secs,
        steps as f64 / c_secs
    );
}

#[test]
fn gpu_prompted_model_matches_cpu_and_reuses_cache() {
    let m = Arc::new(model());
    let gpu = gpu();
    let gm = block_on(GpuModel::with_gpu(gpu, &m, 64)).unwrap();
    let prompt = m.tokenizer().encode("Colours: red,").unwrap();
    let mut g = GpuPromptedModel::new(gm, prompt.clone()).unwrap();
    let mut c = lm::PromptedModel::new(m.clone(), prompt.clone()).unwrap();
    let prefixes: [&[TokenId]; 5] = [&[], &[6353], &[6353, 28], &[6353], &[6353]];
    for p in prefixes {
        let gl = block_on(g.logprobs(p)).unwrap();
        let cl = block_on(c.logprobs(p)).unwrap();
        let diff = gl
            .iter()
            .zip(&cl)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        // Log-softmax shifts every logit by one log-sum-exp: twice the logit tolerance.
        assert!(diff <= 2.0 * LOGIT_TOLERANCE as f64, "prefix {p:?}: {diff}");
        assert_eq!(g.forward_tokens(), c.forward_tokens(), "prefix {p:?}");
        assert_eq!(g.cached_len(), prompt.len() + p.len());
    }
    assert_eq!(g.eos(), m.tokenizer().eos());
    assert_eq!(g.vocab_size(), m.config().vocab_size);
    // Past the GPU context: a clear error, and the model still works afterwards.
    let e = block_on(g.logprobs(&[28; 64])).unwrap_err();
    assert!(e.0.contains("exceed the GPU context of 64"), "{e}");
    let e = block_on(g.logprobs(&[1 << 30])).unwrap_err();
    assert!(e.0.contains("outside the vocabulary"), "{e}");
    assert!(block_on(g.logprobs(&[28])).is_ok());
    let e = GpuPromptedModel::new(g.into_model(), vec![]).unwrap_err();
    assert!(e.0.contains("empty"), "{e}");
}

/// The logits after the last of `tokens`, from scratch on the CPU.
fn cpu_last(m: &Model, tokens: &[TokenId]) -> Vec<f32> {
    let mut cache = m.new_cache();
    m.forward(&mut cache, tokens, tokens.len() - 1).unwrap()
}

/// How far an f16 KV cache ([`KvFormat::F16`]) may move the logits from the CPU's: each
/// cached key and value is rounded to 11 significant bits (relative error up to 2⁻¹¹),
/// and the scores and values those feed move every later block. The bound is the
/// measurement with room, not a derivation: at most 0.038 at 34 positions on lavapipe,
/// against 1e-4 for the f32 cache. 0.1 still catches a wrong kernel (whole units).
const F16_CACHE_LOGIT_TOLERANCE: f32 = 0.1;

/// An f16 KV cache where the device has `shader-f16`: logits within their own bound of the
/// CPU's across a prompt, a prefix copied between slots (half-width rows) and a batched
/// pass; measurably different from the f32 cache's (the rounding is real); half its
/// cache bytes.
#[test]
fn an_f16_kv_cache_stays_within_its_bound() {
    let m = model();
    let gpu = gpu();
    if !gpu.has_f16() {
        eprintln!(
            "shader-f16: not offered by {}; the f16 KV cache is untested here",
            gpu.adapter_name()
        );
        return;
    }
    let build = |cache| {
        let options = GpuOptions {
            cache,
            ..GpuOptions::default()
        };
        block_on(GpuModel::with_options(gpu.clone(), &m, 64, 3, options)).unwrap()
    };
    let (mut g16, mut g32) = (build(KvFormat::F16), build(KvFormat::F32));
    assert_eq!(g16.kv_format(), KvFormat::F16);
    assert_eq!(g32.kv_format(), KvFormat::F32);
    // Three slots of 64 positions, 30 layers, k and v, 192 wide, and the one-slot buffer
    // copies between slots go through: half the bytes.
    let cache_f32 = ((3 * 30 * 2 + 1) * 64 * 192 * 4) as u64;
    assert_eq!(g32.buffer_bytes() - g16.buffer_bytes(), cache_f32 / 2);
    let p = m.tokenizer().encode_prompt("Name a colour.", true).unwrap();
    let want = m.forward(&mut m.new_cache(), &p, 0).unwrap();
    let got = block_on(g16.forward(&p, 0)).unwrap();
    let f32_got = block_on(g32.forward(&p, 0)).unwrap();
    let (d16, d32, apart) = (
        max_diff(&got, &want),
        max_diff(&f32_got, &want),
        max_diff(&got, &f32_got),
    );
    eprintln!(
        "# figure: prompt of {} tokens, max |Δlogit| from the CPU: f16 cache {d16:.4}, f32 \
         cache {d32:.4}; f16 from f32 {apart:.4}",
        p.len()
    );
    assert!(d16 <= F16_CACHE_LOGIT_TOLERANCE, "{d16}");
    assert!(apart > 1e-3, "the f16 cache rounds: {apart}");
    // Slot 1 takes slot 0's first five positions and goes on; slot 2 starts afresh.
    g16.copy_prefix(0, 1, 5).unwrap();
    let runs: [(usize, &[TokenId]); 2] = [(1, &p[5..9]), (2, &p[..3])];
    let got = block_on(g16.forward_slots(&runs)).unwrap();
    let d1 = max_diff(&got[0], &cpu_last(&m, &p[..9]));
    let d2 = max_diff(&got[1], &cpu_last(&m, &p[..3]));
    assert!(d1.max(d2) <= F16_CACHE_LOGIT_TOLERANCE, "{d1} {d2}");
}

/// The output product folded into attention ([`GpuOptions::fold_output`]: four dispatches a
/// block): the logits of a prompt (one pass of 16 tokens, then the rest), and of two
/// sequences in one batched pass after a prefix copy, within the f32 bound of the CPU's.
#[test]
fn folding_the_output_product_keeps_the_logits() {
    let m = model();
    let options = GpuOptions {
        fold_output: true,
        ..GpuOptions::default()
    };
    let mut gm = block_on(GpuModel::with_options(gpu(), &m, 64, 3, options)).unwrap();
    assert!(gm.folds_output(), "SmolLM2's blocks fold");
    let p = m.tokenizer().encode_prompt("Name a colour.", true).unwrap();
    assert!(p.len() > 16, "two chunks");
    let want = m.forward(&mut m.new_cache(), &p, 0).unwrap();
    let got = block_on(gm.forward(&p, 0)).unwrap();
    let d = max_diff(&got, &want);
    eprintln!(
        "# figure: output product folded, {} tokens: max |Δlogit| from the CPU {d:.2e}",
        p.len()
    );
    assert!(d < LOGIT_TOLERANCE, "{d}");
    gm.copy_prefix(0, 1, 5).unwrap();
    let runs: [(usize, &[TokenId]); 2] = [(1, &p[5..9]), (2, &p[..3])];
    let got = block_on(gm.forward_slots(&runs)).unwrap();
    assert!(max_diff(&got[0], &cpu_last(&m, &p[..9])) < LOGIT_TOLERANCE);
    assert!(max_diff(&got[1], &cpu_last(&m, &p[..3])) < LOGIT_TOLERANCE);
}

/// Several sequences in one GPU pass (`forward_slots`), each in its own KV cache: each gets
/// the logits a pass of its own gets on the CPU, across submissions (33 tokens: three
/// chunks of at most 16, the runs' last tokens split between the second and third), after
/// a prefix copied between slots, and through the prompted model's batches (SMC-like
/// steps, more sequences than slots).
#[test]
fn batched_gpu_passes_match_single_passes() {
    let m = Arc::new(model());
    let mut gm = block_on(GpuModel::with_slots(gpu(), &m, 64, 3)).unwrap();
    let enc = |s: &str| m.tokenizer().encode(s).unwrap();
    let a = enc("Colours: red,");
    let long = "A list of fruit, one per line: apple, pear, plum, fig, cherry, grape, lemon, \
                lime, mango, melon, peach, kiwi, quince";
    let b: Vec<TokenId> = enc(long)[..32 - a.len()].to_vec();
    // Tokens before the last ones: a.len() - 1 + b.len() - 1 = 30, so the three last
    // tokens are 30, 31 (second chunk) and 32 (third).
    let runs: [(usize, &[TokenId]); 3] = [(0, &a), (1, &b), (2, &[28])];
    assert_eq!(runs.iter().map(|r| r.1.len()).sum::<usize>(), 33);
    let got = block_on(gm.forward_slots(&runs)).unwrap();
    for ((slot, tokens), g) in runs.iter().zip(&got) {
        let d = max_diff(g, &cpu_last(&m, tokens));
        assert!(d < LOGIT_TOLERANCE, "slot {slot}: {d}");
        assert_eq!(gm.slot_len(*slot), tokens.len());
    }
    // Slot 2 takes slot 1's first five positions and goes on from there; slot 0 goes on too.
    gm.copy_prefix(1, 2, 5).unwrap();
    assert_eq!(gm.slot_len(2), 5);
    let got = block_on(gm.forward_slots(&[(0, &[6353]), (2, &[11, 28])])).unwrap();
    let a2: Vec<TokenId> = a.iter().copied().chain([6353]).collect();
    let b2: Vec<TokenId> = b[..5].iter().copied().chain([11, 28]).collect();
    assert!(max_diff(&got[0], &cpu_last(&m, &a2)) < LOGIT_TOLERANCE);
    assert!(max_diff(&got[1], &cpu_last(&m, &b2)) < LOGIT_TOLERANCE);
    // Bad batches are refused with what is wrong, and touch nothing.
    let e = block_on(gm.forward_slots(&[(0, &[28]), (0, &[28])])).unwrap_err();
    assert!(e.0.contains("twice"), "{e}");
    let e = block_on(gm.forward_slots(&[(3, &[28])])).unwrap_err();
    assert!(e.0.contains("outside the 3 GPU KV caches"), "{e}");
    let e = block_on(gm.forward_slots(&[(1, &[28; 64])])).unwrap_err();
    assert!(e.0.contains("exceeds the GPU context of 64"), "{e}");
    assert_eq!(gm.slot_len(1), b.len());

    // The prompted model's batches: particles growing, resampled (two copies of one),
    // and five sequences over three slots.
    let mut g = GpuPromptedModel::new(gm, a.clone()).unwrap();
    let mut c = lm::PromptedModel::new(m.clone(), a.clone()).unwrap();
    let steps: [&[&[TokenId]]; 3] = [
        &[&[6353], &[28], &[11]],
        &[&[6353, 28], &[28, 28], &[11, 6353]],
        &[
            &[6353, 28, 11],
            &[6353, 28, 11],
            &[28],
            &[11, 6353, 28],
            &[5],
        ],
    ];
    for step in steps {
        let gl = block_on(g.logprobs_batch(step)).unwrap();
        let cl = block_on(c.logprobs_batch(step)).unwrap();
        for ((p, x), y) in step.iter().zip(&gl).zip(&cl) {
            let d = x
                .iter()
                .zip(y)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            assert!(d <= 2.0 * LOGIT_TOLERANCE as f64, "prefix {p:?}: {d}");
        }
    }
}

/// Whether `bytes` is a whole match of `pattern` (the byte automaton, walked byte by byte).
fn full_match(pattern: &str, bytes: &[u8]) -> bool {
    let a = RegexAutomaton::new(pattern).unwrap();
    let mut s = Some(a.initial());
    for &b in bytes {
        s = s.and_then(|s| a.step(s, b));
    }
    s.is_some_and(|s| a.is_accepting(s))
}

#[test]
fn masked_decoding_on_the_gpu_matches_its_cpu_reference_and_the_regex() {
    let m = Arc::new(model());
    let mut gm = block_on(GpuModel::with_gpu(gpu(), &m, 96)).unwrap();
    let vocab = m.tokenizer().vocabulary();
    let cases = [
        (
            "(yes|no|maybe)",
            "Is the sky blue on a clear day? Answer yes, no or maybe.",
            DecodeMask::Live,
            6,
            1,
        ),
        (
            "[0-9]{4}-[0-9]{2}-[0-9]{2}",
            "On what date did Apollo 11 land on the Moon? Answer with the date only.",
            DecodeMask::Budget,
            11,
            3,
        ),
    ];
    for (pattern, question, mask, max, seed) in cases {
        let automaton = TensorizedAutomaton::new(
            &RegexAutomaton::new(pattern).unwrap(),
            &vocab,
            &Limits::default(),
        )
        .unwrap();
        let prompt = m.tokenizer().encode_prompt(question, true).unwrap();
        let decoder = block_on(MaskedDecoder::new(&gm, &automaton)).unwrap();
        let mut streamed = Vec::new();
        let t = Instant::now();
        let got = block_on(decoder.decode(
            &mut gm,
            &automaton,
            &prompt,
            max,
            mask,
            &mut SeededRng::new(seed),
            |t| {
                streamed.push(*t);
                true
            },
        ))
        .unwrap();
        let gpu_secs = t.elapsed().as_secs_f64();
        let mut cpu = lm::PromptedModel::new(m.clone(), prompt.clone()).unwrap();
        let want =
            masked_decode_reference(&mut cpu, &automaton, max, mask, &mut SeededRng::new(seed))
                .unwrap();
        let ids = |d: &lm::gpu::Decoding| d.tokens.iter().map(|t| t.token).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&want), "{pattern}");
        assert_eq!(streamed, got.tokens);
        for (g, w) in got.tokens.iter().zip(&want.tokens) {
            assert!(
                (g.log_z - w.log_z).abs() <= 1e-3 && (g.logp - w.logp).abs() <= 1e-3,
                "{pattern}: log Z, log p {} {} on the GPU vs {} {} on the CPU",
                g.log_z,
                g.logp,
                w.log_z,
                w.logp
            );
            assert!(g.logp <= g.log_z + 1e-4, "a kept token's p is at most Z");
        }
        // The output is a whole match, ended with EOS (within the budget for Budget).
        assert!(
            got.ended && !got.stopped,
            "{pattern}: no EOS within {max} tokens"
        );
        let ids = ids(&got);
        let text = vocab.decode(&ids[..ids.len() - 1]);
        assert!(
            full_match(pattern, &text),
            "{pattern}: {:?}",
            String::from_utf8_lossy(&text)
        );
        eprintln!(
            "masked decoding on the GPU ({mask:?}, {pattern}): {:?} in {} tokens, {gpu_secs:.1} s, log Z per step {:?}",
            String::from_utf8_lossy(&text),
            ids.len(),
            got.tokens.iter().map(|t| t.log_z).collect::<Vec<_>>()
        );
    }
}
