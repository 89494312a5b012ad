//! `strait bench masks`: microseconds per full-vocabulary mask for each example constraint,
//! every engine side by side in one run: our token trie and tensorized automaton on the
//! CPU, the WGSL mask kernel on the native adapter, and llguidance; one CPU forward pass
//! of the model for scale. For regular constraints also one masked sampling step both
//! ways, side by side: mask and draw on the GPU (16 bytes read back) against the mask on
//! the GPU, logits and mask read back, and the draw on the CPU.

use crate::args::BenchArgs;
use crate::failure::Result;
use grammars::{CfgConstraint, Compiler, Format};
use lm::Model;
use sampler_core::{
    Constraint, RandomSource, RegexConstraint, SeededRng, TensorizedAutomaton, TokenId, TokenSet,
    Vocabulary, block_on,
};
use shaders::{Gpu, MaskedSample, TokenMask};
use std::time::Instant;

/// States (token prefixes) masked per constraint.
const STATES: usize = 24;
/// Timed passes over the states.
const REPS: usize = 5;

/// The regular constraints measured: the examples' regexes and some from the tests.
fn regexes() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = [
        ("yes-no-maybe", "(yes|no|maybe)"),
        ("iso-date", "[0-9]{4}-[0-9]{2}-[0-9]{2}"),
        ("phone", r"\(\d{3}\) \d{3}-\d{4}"),
        ("json-x-integer", r#"\{"x": -?(0|[1-9][0-9]{0,15})\}"#),
        ("words", "[a-z]+( [a-z]+){0,5}"),
        (
            "animals",
            "(the|a|an) (cat|dog|bird)( and (the|a|an) (cat|dog|bird))*",
        ),
    ]
    .iter()
    .map(|(n, r)| (n.to_string(), r.to_string()))
    .collect();
    for (name, path) in example_files(&["regex"]) {
        if let Ok(text) = std::fs::read_to_string(&path) {
            out.push((name, text.trim_end_matches(['\n', '\r']).to_string()));
        }
    }
    out
}

/// `assets/examples` files with one of `exts`, sorted: (file name, path).
fn example_files(exts: &[&str]) -> Vec<(String, std::path::PathBuf)> {
    let mut files: Vec<_> = std::fs::read_dir("assets/examples")
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| exts.iter().any(|x| e == *x)))
        .map(|f| {
            let name = f
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, f)
        })
        .collect()
}

/// The WGSL mask kernel on the native adapter, when there is one.
struct Wgsl {
    gpu: Gpu,
    kernel: TokenMask,
    sample: MaskedSample,
}

impl Wgsl {
    fn open() -> Option<Wgsl> {
        let gpu = match block_on(Gpu::new()) {
            Ok(g) => g,
            Err(e) => {
                headless::note!("strait: WGSL mask timings skipped: {e}");
                return None;
            }
        };
        let kernels = block_on(TokenMask::new(&gpu))
            .and_then(|k| Ok((k, block_on(MaskedSample::new(&gpu))?)));
        match kernels {
            Ok((kernel, sample)) => Some(Wgsl {
                gpu,
                kernel,
                sample,
            }),
            Err(e) => {
                headless::note!("strait: WGSL mask timings skipped: {e}");
                None
            }
        }
    }

    /// Times the kernel on `flags` (one per state): B_f uploaded once; returns
    /// (µs per flags upload + dispatch + read-back, µs per dispatch amortized over
    /// back-to-back dispatches, whether every mask equals the CPU reference).
    fn time(&self, t: &TensorizedAutomaton, flags: &[Vec<u32>]) -> Result<(f64, f64, bool)> {
        let gpu = &self.gpu;
        let words = t.words_per_row;
        let fb = gpu.storage("flags", &shaders::u32_bytes(&vec![0; t.num_edges()]))?;
        let bf = gpu.storage("bf", &shaders::u32_bytes(&t.bf))?;
        let mb = gpu.zeroed("mask", words)?;
        let dims = TokenMask::dims(gpu, t.num_edges(), words);
        let bind = self.kernel.bind(gpu, &fb, &bf, &mb, &dims);
        let one = |f: &[u32]| -> Result<Vec<u32>> {
            gpu.write_words(&fb, 0, f);
            gpu.run(|p| self.kernel.dispatch(p, &bind, words))?;
            Ok(block_on(gpu.read_words(&mb, 0, words))?)
        };
        // Warm-up and check against the CPU reference.
        let mut same = true;
        for f in flags {
            same &= one(f)? == t.mask_from_edge_flags(f);
        }
        let t0 = Instant::now();
        let mut sink = 0u32;
        for _ in 0..REPS {
            for f in flags {
                sink ^= one(f)?[0];
            }
        }
        let roundtrip = t0.elapsed().as_secs_f64() * 1e6 / (REPS * flags.len()) as f64;
        std::hint::black_box(sink);
        let n = REPS * flags.len();
        let t0 = Instant::now();
        for _ in 0..n {
            gpu.run(|p| self.kernel.dispatch(p, &bind, words))?;
        }
        block_on(gpu.read_words(&mb, 0, 1))?;
        let dispatch = t0.elapsed().as_secs_f64() * 1e6 / n as f64;
        Ok((roundtrip, dispatch, same))
    }

    /// Times one masked sampling step per flags (logits resident on the GPU, standing
    /// in for the output head's buffer) two ways; returns (µs per step with the draw on
    /// the GPU, µs per step reading logits and mask back and drawing on the CPU, the
    /// fraction of steps where both drew the same token at the same u).
    fn time_sampling(
        &self,
        t: &TensorizedAutomaton,
        flags: &[Vec<u32>],
        logits: &[f32],
    ) -> Result<(f64, f64, f64)> {
        let gpu = &self.gpu;
        let (words, vocab) = (t.words_per_row, t.vocab_size);
        let fb = gpu.storage("flags", &shaders::u32_bytes(&vec![0; t.num_edges()]))?;
        let bf = gpu.storage("bf", &shaders::u32_bytes(&t.bf))?;
        let mb = gpu.zeroed("mask", words)?;
        let lb = gpu.storage("logits", &shaders::f32_bytes(logits))?;
        let dims = TokenMask::dims(gpu, t.num_edges(), words);
        let bind = self.kernel.bind(gpu, &fb, &bf, &mb, &dims);
        let sbind = self.sample.bind(gpu, &lb, 0, &mb, vocab)?;
        let us: Vec<f32> = (0..flags.len())
            .map(|i| ((i as f32 + 0.5) / flags.len() as f32).min(0.999))
            .collect();
        // Mask and draw on the GPU: one submission, 16 bytes back. `None` for a dead end.
        let on_gpu = |f: &[u32], u: f32| -> Result<Option<u32>> {
            gpu.write_words(&fb, 0, f);
            self.sample.set_u(gpu, &sbind, u)?;
            gpu.run(|p| {
                self.kernel.dispatch(p, &bind, words);
                self.sample.dispatch(p, &sbind);
            })?;
            match block_on(self.sample.read(gpu, &sbind)) {
                Ok(d) => Ok(Some(d.token)),
                Err(shaders::GpuError::AllMasked) => Ok(None),
                Err(e) => Err(e.into()),
            }
        };
        // Mask on the GPU, logits and mask read back, the draw on the CPU.
        let on_cpu = |f: &[u32], u: f32| -> Result<Option<u32>> {
            gpu.write_words(&fb, 0, f);
            gpu.run(|p| self.kernel.dispatch(p, &bind, words))?;
            let mask = block_on(gpu.read_words(&mb, 0, words))?;
            let l = block_on(gpu.read_f32(&lb, 0, vocab))?;
            Ok(cpu_masked_draw(&l, &mask, u))
        };
        let mut agree = 0usize;
        for (f, &u) in flags.iter().zip(&us) {
            agree += usize::from(on_gpu(f, u)? == on_cpu(f, u)?);
        }
        let time = |step: &SampleStep<'_>| -> Result<f64> {
            let t0 = Instant::now();
            let mut sink = 0u32;
            for _ in 0..REPS {
                for (f, &u) in flags.iter().zip(&us) {
                    sink ^= step(f, u)?.unwrap_or(0);
                }
            }
            std::hint::black_box(sink);
            Ok(t0.elapsed().as_secs_f64() * 1e6 / (REPS * flags.len()) as f64)
        };
        let gpu_us = time(&on_gpu)?;
        let cpu_us = time(&on_cpu)?;
        Ok((gpu_us, cpu_us, agree as f64 / flags.len().max(1) as f64))
    }
}

/// One masked sampling step at flags and u: the token, `None` at a dead end.
type SampleStep<'a> = dyn Fn(&[u32], f32) -> Result<Option<u32>> + 'a;

/// The CPU side of the comparison: the kept tokens' softmax (over set mask bits only) and
/// the inverse-CDF draw at `u`, in one pass for the maximum and one for the sums; log Z
/// needs the sum over all logits too, as on the GPU. `None` when nothing is kept.
fn cpu_masked_draw(logits: &[f32], mask: &[u32], u: f32) -> Option<u32> {
    let kept = || {
        mask.iter().enumerate().flat_map(|(w, &bits)| {
            let mut b = bits;
            std::iter::from_fn(move || {
                (b != 0).then(|| {
                    let t = w * 32 + b.trailing_zeros() as usize;
                    b &= b - 1;
                    t
                })
            })
        })
    };
    let m_all = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let s_all: f32 = logits.iter().map(|&l| (l - m_all).exp()).sum();
    let m = kept()
        .filter(|&t| t < logits.len())
        .map(|t| logits[t])
        .fold(f32::NEG_INFINITY, f32::max);
    if m == f32::NEG_INFINITY {
        return None;
    }
    let total: f32 = kept()
        .filter(|&t| t < logits.len())
        .map(|t| (logits[t] - m).exp())
        .sum();
    std::hint::black_box((m + total.ln()) - (m_all + s_all.ln()));
    let goal = u * total;
    let mut acc = 0f32;
    let mut last = None;
    for t in kept().filter(|&t| t < logits.len()) {
        let w = (logits[t] - m).exp();
        last = Some(t as u32);
        if acc + w > goal {
            break;
        }
        acc += w;
    }
    last
}

/// Logits like a language model's (a broad base and a few sharp peaks), seeded.
fn lm_like_logits(vocab: usize) -> Vec<f32> {
    let mut rng = SeededRng::new(9);
    (0..vocab)
        .map(|_| {
            let base = (rng.uniform() * 6.0 - 3.0) as f32;
            if rng.bernoulli(0.002) {
                base + 10.0
            } else {
                base
            }
        })
        .collect()
}

/// Prints one JSON line per constraint: compile times, automaton size, µs per mask for
/// every engine; then one line with the µs of one CPU forward pass.
pub fn run(args: &BenchArgs) -> Result<()> {
    let model = Model::load(&args.model)?;
    let vocab = model.tokenizer().vocabulary();
    let compiler = Compiler::new(&vocab)?;
    let wgsl = Wgsl::open();
    let logits = lm_like_logits(vocab.len());
    if let Some(w) = &wgsl {
        headless::note!("strait: WGSL adapter: {}", w.gpu.adapter_name());
    }
    for (name, re) in regexes() {
        let t0 = Instant::now();
        let c = match RegexConstraint::from_regex(&re, &vocab) {
            Ok(c) => c,
            Err(e) => {
                headless::note!("strait: {name}: {e}");
                continue;
            }
        };
        let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        let prefixes = walk_prefixes(&c, &vocab, STATES);
        let states: Vec<_> = prefixes.iter().map(|p| replay(&c, p)).collect();
        let trie_us = time_us(&states, |s| c.mask(s));
        let mean_allowed =
            states.iter().map(|s| c.mask(s).count()).sum::<usize>() as f64 / states.len() as f64;
        let tensor_us = time_us(&states, |s| {
            c.regular()
                .map_or_else(|| c.mask(s), |r| r.budget_mask(s, 1 << 20))
        });
        let t0 = Instant::now();
        let (llg_compile_ms, llg_us) = match compiler.compile_regex_reference(&re) {
            Ok(r) => (
                Some(t0.elapsed().as_secs_f64() * 1e3),
                Some(llguidance_us(&r, &prefixes)),
            ),
            Err(e) => {
                headless::note!("strait: {name}: llguidance: {e}");
                (None, None)
            }
        };
        let tz = c.regular().and_then(|r| r.tensorized());
        let (mut wgsl_us, mut wgsl_dispatch_us, mut wgsl_ok) = (None, None, None);
        let (mut gpu_sample_us, mut cpu_sample_us, mut draws_agree) = (None, None, None);
        if let (Some(w), Some(t)) = (&wgsl, tz) {
            let flags: Vec<Vec<u32>> = states
                .iter()
                .filter_map(|s| c.regular()?.tensor_state(s))
                .map(|q| t.edge_flags(&t.one_hot(q), 1 << 20))
                .collect();
            match w.time(t, &flags) {
                Ok((rt, d, same)) => {
                    wgsl_us = Some(rt);
                    wgsl_dispatch_us = Some(d);
                    wgsl_ok = Some(same);
                }
                Err(e) => headless::note!("strait: {name}: WGSL: {e}"),
            }
            match w.time_sampling(t, &flags, &logits) {
                Ok((g, c, a)) => {
                    gpu_sample_us = Some(g);
                    cpu_sample_us = Some(c);
                    draws_agree = Some(a);
                }
                Err(e) => headless::note!("strait: {name}: masked sampling: {e}"),
            }
        }
        let line = serde_json::json!({
            "constraint": name,
            "vocab": vocab.len(),
            "compile_ms": compile_ms,
            "states": tz.map(|t| t.num_states),
            "edges": tz.map(|t| t.num_edges()),
            "bf_bytes": tz.map(|t| t.bf_bytes()),
            "trie_mask_us": trie_us,
            "tensorized_mask_us": tensor_us,
            "wgsl_mask_us": wgsl_us,
            "wgsl_dispatch_us": wgsl_dispatch_us,
            "wgsl_equals_cpu": wgsl_ok,
            "mask_sample_gpu_us": gpu_sample_us,
            "mask_readback_sample_cpu_us": cpu_sample_us,
            "sample_draws_agree": draws_agree,
            "llg_compile_ms": llg_compile_ms,
            "llg_mask_us": llg_us,
            "masked_states": states.len(),
            "mean_allowed": mean_allowed,
        });
        crate::stdout::line(line);
    }
    for (name, path) in example_files(&["lark", "gbnf", "json"]) {
        let t0 = Instant::now();
        let c = match compiler.compile_file(&path, Format::from_path(&name)) {
            Ok(c) => c,
            Err(e) => {
                headless::note!("strait: {name}: {e}");
                continue;
            }
        };
        let llg_compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        let prefixes = walk_prefixes(&c, &vocab, STATES);
        let mean_allowed = prefixes
            .iter()
            .map(|p| c.mask(&replay(&c, p)).count())
            .sum::<usize>() as f64
            / prefixes.len() as f64;
        let line = serde_json::json!({
            "constraint": name,
            "vocab": vocab.len(),
            "llg_compile_ms": llg_compile_ms,
            "llg_mask_us": llguidance_us(&c, &prefixes),
            "masked_states": prefixes.len(),
            "mean_allowed": mean_allowed,
        });
        crate::stdout::line(line);
    }
    let line = serde_json::json!({
        "engine": "strait-cpu",
        "forward_us": forward_us(&model)?,
    });
    crate::stdout::line(line);
    Ok(())
}

/// Mean µs of one single-token CPU forward pass (decode), after a short prefill.
fn forward_us(model: &Model) -> Result<f64> {
    let prompt = model.tokenizer().encode("The token mask costs")?;
    let mut cache = model.new_cache();
    model.forward(&mut cache, &prompt, prompt.len() - 1)?;
    let n = 8;
    let t0 = Instant::now();
    for i in 0..n {
        model.forward(&mut cache, &[prompt[i % prompt.len()]], 0)?;
    }
    Ok(t0.elapsed().as_secs_f64() * 1e6 / n as f64)
}

/// Up to `n` token prefixes met on random walks through allowed tokens (restarting at
/// the end of the language or after 32 tokens).
fn walk_prefixes<C: Constraint>(c: &C, vocab: &Vocabulary, n: usize) -> Vec<Vec<TokenId>> {
    let mut rng = SeededRng::new(1);
    let mut out = Vec::with_capacity(n);
    let mut state = c.initial();
    let mut prefix = Vec::new();
    while out.len() < n {
        out.push(prefix.clone());
        let allowed: Vec<u32> = c
            .mask(&state)
            .iter()
            .filter(|&t| t != vocab.eos())
            .collect();
        let next = if allowed.is_empty() || prefix.len() >= 32 {
            None
        } else {
            let t = allowed[(rng.uniform() * allowed.len() as f64) as usize % allowed.len()];
            c.advance(&state, t).map(|s| (s, t))
        };
        match next {
            Some((s, t)) => {
                state = s;
                prefix.push(t);
            }
            None => {
                state = c.initial();
                prefix.clear();
            }
        }
    }
    out
}

/// The state after `prefix` (a prefix met on a walk, so every token advances).
fn replay<C: Constraint>(c: &C, prefix: &[TokenId]) -> C::State {
    prefix.iter().fold(c.initial(), |s, &t| {
        c.advance(&s, t).unwrap_or_else(|| c.initial())
    })
}

/// Mean µs of llguidance's mask at the states after `prefixes`. Each mask is computed on
/// a freshly replayed state (untimed), so no per-state result is reused; one untimed pass
/// warms llguidance's shared lexer caches first, as during sampling.
fn llguidance_us(c: &CfgConstraint, prefixes: &[Vec<TokenId>]) -> f64 {
    let mut total = 0.0;
    let mut sink = 0usize;
    for rep in 0..=REPS {
        for p in prefixes {
            let s = replay(c, p);
            let t0 = Instant::now();
            sink += c.mask(&s).count();
            if rep > 0 {
                total += t0.elapsed().as_secs_f64();
            }
        }
    }
    std::hint::black_box(sink);
    total * 1e6 / (REPS * prefixes.len()) as f64
}

/// Mean microseconds of `f` over `states` (each state masked `REPS` times).
fn time_us<S>(states: &[S], mut f: impl FnMut(&S) -> TokenSet) -> f64 {
    let mut sink = 0usize;
    let t0 = Instant::now();
    for _ in 0..REPS {
        for s in states {
            sink += f(s).count();
        }
    }
    std::hint::black_box(sink);
    t0.elapsed().as_secs_f64() * 1e6 / (REPS * states.len()) as f64
}
