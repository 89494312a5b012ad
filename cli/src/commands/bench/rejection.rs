//! `strait bench rejection`: the rejection samplers on the real model with their
//! generations one at a time beside lockstep batches (`--batch`), in one run: wall time,
//! LM calls, forward tokens and generations per valid sample.

use super::harness::{example, fresh, params, run_one};
use crate::args::BenchArgs;
use crate::failure::Result;
use sampler_core::samplers::{Method, Params};
use std::fmt::Write as _;

/// Methods measured (plain `rs` rarely finishes this example in time).
const METHODS: [Method; 3] = [Method::SampleVerify, Method::Ars, Method::Cars];
/// Batch sizes measured.
const BATCHES: [usize; 3] = [1, 4, 8];
/// Seeds per cell: each a fresh run (new trie) of [`VALID`] samples.
const SEEDS: u64 = 10;
/// Valid samples per run.
const VALID: usize = 5;
/// Most tokens per sequence.
const MAX_TOKENS: usize = 12;

/// Prints a JSON line per (method, batch) and the markdown table on stderr.
pub fn run(args: &BenchArgs) -> Result<()> {
    let model = super::harness::model(args)?;
    let vocab = model.tokenizer().vocabulary();
    let (c, prompt_text) = example(&vocab)?;
    let prompt = model.tokenizer().encode_prompt(&prompt_text, true)?;
    let mut table = format!(
        "rejection samplers on SmolLM2 (CPU forward pass, {} threads), \
         `assets/examples/json_x_integer.json` with its chat prompt, max {MAX_TOKENS} tokens; \
         {SEEDS} runs (seeds 1–{SEEDS}, a fresh trie each) of {VALID} valid samples per cell, \
         prompt prefilled before timing. *batch*: generations drawn in lockstep, one model \
         pass for all of them per step, trie updates after the batch.\n\n\
         | method | batch | wall s | s / valid | × batch 1 | generations / valid | LM calls / valid | forward tokens / valid |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
        lm::forward::threads(),
    );
    for method in METHODS {
        let mut base = None;
        for batch in BATCHES {
            let p = Params {
                batch,
                ..params(VALID, 1, 1, MAX_TOKENS)
            };
            let (mut secs, mut valid) = (0.0, 0usize);
            let (mut gens, mut calls, mut fwd) = (0u64, 0u64, 0u64);
            for seed in 1..=SEEDS {
                let mut lm = fresh(&model, &prompt)?;
                let o = run_one(method, &p, &mut lm, &c, seed, Some(60.0));
                if let Some(e) = &o.error {
                    headless::note!(
                        "strait: bench rejection: {method}, batch {batch}, seed {seed}: {e}"
                    );
                }
                secs += o.secs;
                valid += o.valid();
                gens += o.counters.generations;
                calls += o.counters.lm_calls;
                fwd += o.counters.forward_tokens;
            }
            let per = |x: f64| x / valid.max(1) as f64;
            let s_valid = per(secs);
            let base = *base.get_or_insert(s_valid);
            crate::stdout::line(serde_json::json!({
                "bench": "rejection",
                "method": method.to_string(),
                "batch": batch,
                "wall_s": secs,
                "valid": valid,
                "s_per_valid": s_valid,
                "vs_batch_1": s_valid / base,
                "generations_per_valid": per(gens as f64),
                "lm_calls_per_valid": per(calls as f64),
                "forward_tokens_per_valid": per(fwd as f64),
            }));
            let _ = writeln!(
                table,
                "| {method} | {batch} | {secs:.2} | {s_valid:.3} | {:.2} | {:.1} | {:.1} | {:.1} |",
                s_valid / base,
                per(gens as f64),
                per(calls as f64),
                per(fwd as f64),
            );
        }
    }
    headless::note!("{table}");
    Ok(())
}
