//! `strait bench masks`: microseconds per full-vocabulary mask for each example constraint,
//! every engine side by side in one run: our token trie and tensorized automaton on the
//! CPU, the WGSL mask kernel on the native adapter, and llguidance; one CPU forward pass
//! of the model for scale.

use crate::args::BenchArgs;
use crate::failure::Result;
use grammars::{CfgConstraint, Compiler, Format};
use lm::Model;
use sampler_core::{
    Constraint, RandomSource, RegexConstraint, SeededRng, TensorizedAutomaton, TokenId, TokenSet,
    Vocabulary, block_on,
};
use shaders::{Gpu, TokenMask};
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
}

impl Wgsl {
    fn open() -> Option<Wgsl> {
        let gpu = match block_on(Gpu::new()) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("strait: WGSL mask timings skipped: {e}");
                return None;
            }
        };
        match block_on(TokenMask::new(&gpu)) {
            Ok(kernel) => Some(Wgsl { gpu, kernel }),
            Err(e) => {
                eprintln!("strait: WGSL mask timings skipped: {e}");
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
}

/// Prints one JSON line per constraint: compile times, automaton size, µs per mask for
/// every engine; then one line with the µs of one CPU forward pass.
pub fn run(args: &BenchArgs) -> Result<()> {
    let model = Model::load(&args.model)?;
    let vocab = model.tokenizer().vocabulary();
    let compiler = Compiler::new(&vocab)?;
    let wgsl = Wgsl::open();
    if let Some(w) = &wgsl {
        eprintln!("strait: WGSL adapter: {}", w.gpu.adapter_name());
    }
    for (name, re) in regexes() {
        let t0 = Instant::now();
        let c = match RegexConstraint::from_regex(&re, &vocab) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("strait: {name}: {e}");
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
            c.budget_mask(s, 1 << 20).unwrap_or_else(|| c.mask(s))
        });
        let t0 = Instant::now();
        let (llg_compile_ms, llg_us) = match compiler.compile_regex_reference(&re) {
            Ok(r) => (
                Some(t0.elapsed().as_secs_f64() * 1e3),
                Some(llguidance_us(&r, &prefixes)),
            ),
            Err(e) => {
                eprintln!("strait: {name}: llguidance: {e}");
                (None, None)
            }
        };
        let tz = c.tensorized();
        let (mut wgsl_us, mut wgsl_dispatch_us, mut wgsl_ok) = (None, None, None);
        if let (Some(w), Some(t)) = (&wgsl, tz) {
            let flags: Vec<Vec<u32>> = states
                .iter()
                .filter_map(|s| c.tensor_state(s))
                .map(|q| t.edge_flags(&t.one_hot(q), 1 << 20))
                .collect();
            match w.time(t, &flags) {
                Ok((rt, d, same)) => {
                    wgsl_us = Some(rt);
                    wgsl_dispatch_us = Some(d);
                    wgsl_ok = Some(same);
                }
                Err(e) => eprintln!("strait: {name}: WGSL: {e}"),
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
            "llg_compile_ms": llg_compile_ms,
            "llg_mask_us": llg_us,
            "masked_states": states.len(),
            "mean_allowed": mean_allowed,
        });
        println!("{line}");
    }
    for (name, path) in example_files(&["lark", "gbnf", "json"]) {
        let t0 = Instant::now();
        let c = match compiler.compile_file(&path, Format::from_path(&name)) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("strait: {name}: {e}");
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
        println!("{line}");
    }
    let line = serde_json::json!({
        "engine": "strait-cpu",
        "forward_us": forward_us(&model)?,
    });
    println!("{line}");
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
