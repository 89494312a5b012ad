//! `strait bench masks`: microseconds per full-vocabulary mask for each example constraint,
//! every engine side by side in one run.

use crate::args::BenchArgs;
use crate::failure::Result;
use lm::Model;
use sampler_core::{Constraint, RandomSource, RegexConstraint, SeededRng, TokenSet, Vocabulary};
use std::time::Instant;

/// The regular constraints measured: the examples' regexes and two from the tests.
fn regexes() -> Vec<(String, String)> {
    let mut out = vec![
        ("yes-no-maybe".to_string(), "(yes|no|maybe)".to_string()),
        (
            "iso-date".to_string(),
            "[0-9]{4}-[0-9]{2}-[0-9]{2}".to_string(),
        ),
        (
            "json-x-integer".to_string(),
            r#"\{"x": -?(0|[1-9][0-9]{0,15})\}"#.to_string(),
        ),
    ];
    if let Ok(dir) = std::fs::read_dir("assets/examples") {
        let mut files: Vec<_> = dir.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            if f.extension().is_some_and(|e| e == "regex")
                && let Ok(text) = std::fs::read_to_string(&f)
            {
                let name = f
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                out.push((name, text.trim_end_matches(['\n', '\r']).to_string()));
            }
        }
    }
    out
}

/// Prints one JSON line per constraint: compile time, automaton size, µs per mask.
pub fn run(args: &BenchArgs) -> Result<()> {
    let model = Model::load(&args.model)?;
    let vocab = model.tokenizer().vocabulary();
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
        let states = walk_states(&c, &vocab, 24);
        let trie_us = time_us(&states, |s| c.mask(s));
        let tensor_us = time_us(&states, |s| {
            c.budget_mask(s, 1 << 20).unwrap_or_else(|| c.mask(s))
        });
        let tz = c.tensorized();
        let line = serde_json::json!({
            "constraint": name,
            "vocab": vocab.len(),
            "compile_ms": compile_ms,
            "states": tz.map(|t| t.num_states),
            "edges": tz.map(|t| t.num_edges()),
            "bf_bytes": tz.map(|t| t.bf_bytes()),
            "trie_mask_us": trie_us,
            "tensorized_mask_us": tensor_us,
            "masked_states": states.len(),
        });
        println!("{line}");
    }
    Ok(())
}

/// Up to `n` states met on random walks through allowed tokens (restarting at the end).
fn walk_states<C: Constraint>(c: &C, vocab: &Vocabulary, n: usize) -> Vec<C::State> {
    let mut rng = SeededRng::new(1);
    let mut out = Vec::with_capacity(n);
    let mut state = c.initial();
    while out.len() < n {
        out.push(state.clone());
        let allowed: Vec<u32> = c
            .mask(&state)
            .iter()
            .filter(|&t| t != vocab.eos())
            .collect();
        if allowed.is_empty() {
            state = c.initial();
            continue;
        }
        let t = allowed[(rng.uniform() * allowed.len() as f64) as usize % allowed.len()];
        state = c.advance(&state, t).unwrap_or_else(|| c.initial());
    }
    out
}

/// Mean microseconds of `f` over `states` (each state masked 5 times).
fn time_us<S>(states: &[S], mut f: impl FnMut(&S) -> TokenSet) -> f64 {
    let mut sink = 0usize;
    let t0 = Instant::now();
    for _ in 0..5 {
        for s in states {
            sink += f(s).count();
        }
    }
    std::hint::black_box(sink);
    t0.elapsed().as_secs_f64() * 1e6 / (5 * states.len()) as f64
}
