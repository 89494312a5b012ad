//! `strait bench smc`: what an SMC run on the real model costs as the particles grow,
//! with the model's KV-cache slots and batched passes, beside one cache and one sequence
//! at a time (what `PromptedModel` did before it kept slots), in one run. Section 5 of
//! `strait bench samplers` is this table.

use super::harness::{params, run_one};
use crate::args::BenchArgs;
use crate::failure::{Failure, Result};
use lm::PromptedModel;
use sampler_core::samplers::Method;
use sampler_core::{LanguageModel, RegexConstraint, block_on};
use std::fmt::Write as _;

/// The regex and prompt of the measurement (`assets/examples/date.*`).
const REGEX: &str = "[0-9]{4}-[0-9]{2}-[0-9]{2}";
const PROMPT: &str = "Reply with today's date in the format YYYY-MM-DD and nothing else.";
/// Tokens per particle: the date is 10 characters, digits are single tokens.
const MAX_TOKENS: usize = 16;
/// Particle counts measured.
const PARTICLES: [usize; 4] = [1, 4, 8, 16];

/// Prints a JSON line per (engine, M) and returns the markdown table.
pub fn run(args: &BenchArgs) -> Result<String> {
    let model = super::harness::model(args)?;
    let vocab = model.tokenizer().vocabulary();
    let c =
        RegexConstraint::from_regex(REGEX, &vocab).map_err(|e| Failure(format!("{REGEX}: {e}")))?;
    let prompt = model.tokenizer().encode_prompt(PROMPT, true)?;
    let mut table = format!(
        "smc-gcd on SmolLM2 (CPU forward pass, {} threads, {} activations), regex `{REGEX}`, \
         chat prompt {PROMPT:?}, max {MAX_TOKENS} tokens, one run of M particles, seed 1, \
         prompt prefilled before timing. *slots + batch*: the model keeps up to 16 KV caches \
         and runs every particle's new token in one pass; *one cache*: one KV cache reused \
         by longest common prefix, one sequence at a time. *KV MB*: the caches' keys and \
         values at the end, pages shared between slots counted once, and (*copied*) if each \
         slot held its own copy.\n\n\
         | engine | M | wall s | × M = 1 | LM calls | forward tokens | valid | s / valid | LM calls / valid | forward tokens / valid | KV MB | KV MB copied |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        lm::forward::threads(),
        model.activations().name()
    );
    for (engine, slots) in [
        ("slots + batch", lm::prompted::DEFAULT_SLOTS),
        ("one cache", 1),
    ] {
        let mut base = None;
        for m in PARTICLES {
            let mut lm = PromptedModel::new(model.clone(), prompt.clone())?.with_slots(slots);
            block_on(lm.logprobs(&[]))?;
            let p = params(1, 1, m, MAX_TOKENS);
            let o = run_one(Method::SmcGcd, &p, &mut lm, &c, 1, None);
            if let Some(e) = &o.error {
                headless::note!("strait: bench smc: {engine}, M = {m}: {e}");
            }
            let valid = o.valid();
            let base_s = *base.get_or_insert(o.secs);
            let per_valid = |x: f64| {
                if valid > 0 {
                    x / valid as f64
                } else {
                    f64::NAN
                }
            };
            crate::stdout::line(serde_json::json!({
                "bench": "smc",
                "engine": engine,
                "particles": m,
                "wall_s": o.secs,
                "vs_one_particle": o.secs / base_s,
                "lm_calls": o.counters.lm_calls,
                "forward_tokens": o.counters.forward_tokens,
                "valid": valid,
                "s_per_valid": per_valid(o.secs),
                "forward_tokens_per_valid": per_valid(o.counters.forward_tokens as f64),
                "lm_calls_per_valid": per_valid(o.counters.lm_calls as f64),
                "kv_bytes": lm.cache_bytes(),
                "kv_bytes_unshared": lm.cache_bytes_unshared(),
            }));
            let _ = writeln!(
                table,
                "| {engine} | {m} | {:.2} | {:.2} | {} | {} | {valid} | {:.3} | {:.1} | {:.1} | {:.1} | {:.1} |",
                o.secs,
                o.secs / base_s,
                o.counters.lm_calls,
                o.counters.forward_tokens,
                per_valid(o.secs),
                per_valid(o.counters.lm_calls as f64),
                per_valid(o.counters.forward_tokens as f64),
                lm.cache_bytes() as f64 / 1e6,
                lm.cache_bytes_unshared() as f64 / 1e6,
            );
        }
    }
    Ok(table)
}
