//! `strait bench faithful`: for every real-model example of the page (the playground's
//! example table, so the two never disagree), the time each sampler takes to give 10
//! samples (10 SMC runs, 10 chains), its LM calls, and where the time went: the model's
//! forward passes, the constraint's token checks, its full masks, and the rest (the
//! sampler's own bookkeeping: sums, draws, tries, copies). Each example's samplers run
//! one after another on a freshly prefilled model, interleaved by example, so a drift of
//! the machine's speed touches every sampler of an example alike; read the ratios to
//! `lcd` beside each row, not the seconds.

use super::harness::{Outcome, fresh, run_one};
use super::timed::{Split, TimedConstraint, TimedLm};
use crate::args::BenchArgs;
use crate::failure::{Failure, Result};
use lm::Model;
use sampler_core::samplers::{Method, Params};
use sampler_core::{DynConstraint, math::logsumexp};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// The samplers measured unless `--methods` names others: masking (the baseline), the
/// exact rejection sampler, and the two weighted SMC samplers.
const METHODS: [&str; 5] = ["lcd", "auto", "cars", "awrs-smc", "smc-gcd"];

/// Prints a JSON line per (example, sampler) and a markdown table at the end.
pub fn run(args: &BenchArgs) -> Result<()> {
    let model = super::harness::model(args)?;
    let vocab = model.tokenizer().vocabulary();
    let methods: Vec<Method> = if args.methods.is_empty() {
        METHODS
            .iter()
            .map(|m| m.parse())
            .collect::<std::result::Result<_, _>>()
    } else {
        args.methods.iter().map(|m| m.parse()).collect()
    }
    .map_err(Failure)?;
    let base = Params {
        n: args.n,
        particles: args.particles.unwrap_or(Params::default().particles),
        ..Params::default()
    };
    base.validate().map_err(|e| Failure(e.to_string()))?;
    let examples: Vec<_> = playground::examples::examples()
        .iter()
        .filter(|e| e.toy.is_none())
        .filter(|e| args.examples.is_empty() || args.examples.iter().any(|x| x == e.id))
        .collect();
    if examples.is_empty() {
        return crate::failure::fail(format!(
            "--examples names no real-model example; expected some of: {}",
            playground::examples::examples()
                .iter()
                .filter(|e| e.toy.is_none())
                .map(|e| e.id)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut table = format!(
        "SmolLM2-135M ({} activations, {} threads), each example's prompt with its chat \
         template, its max tokens, seed 1, {} samples (SMC: {} runs of {} particles; \
         MCMC: {} chains of {} steps), each run stopped after {} s. *× lcd*: wall time over \
         lcd's on the same example. *model*, *checks*, *masks*: seconds inside the forward \
         pass, the constraint's token checks and its full masks; *other*: the rest. \
         *mass*: the estimate of P(valid within max tokens) the run gives (SMC: mean \
         evidence; rejection: valid / generations).\n\n\
         | example | sampler | valid | wall s | × lcd | LM calls | fwd tokens | checks | model s | checks s | masks s | other s | mass | note |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
        model.activations().name(),
        lm::forward::threads(),
        args.n,
        args.n,
        base.particles,
        args.n,
        base.steps,
        args.budget_s,
    );
    for ex in examples {
        let c = playground::constraint::build_constraint(ex.kind, ex.grammar, &vocab)
            .map_err(|e| Failure(format!("example {}: {e}", ex.id)))?;
        let prompt = model.tokenizer().encode_prompt(ex.prompt, true)?;
        let mut lcd_s = None;
        for &method in &methods {
            if method.needs_regular() && c.regular().is_none() {
                continue;
            }
            headless::note!("strait: bench faithful: {} with {method}", ex.id);
            let p = Params {
                max_tokens: ex.max_tokens,
                ..base.clone()
            };
            let (o, split) = measure(&model, &prompt, &c, method, &p, args.budget_s)?;
            if method == Method::Lcd {
                lcd_s = Some(o.secs);
            }
            let other = Duration::from_secs_f64(o.secs)
                .saturating_sub(split.model + split.checks + split.masks);
            let mass = mass_estimate(&o);
            crate::stdout::line(serde_json::json!({
                "bench": "faithful",
                "example": ex.id,
                "method": method.name(),
                "max_tokens": ex.max_tokens,
                "n": args.n,
                "valid": o.valid(),
                "wall_s": o.secs,
                "vs_lcd": lcd_s.map(|l| o.secs / l),
                "lm_calls": o.counters.lm_calls,
                "forward_tokens": o.counters.forward_tokens,
                "constraint_checks": o.counters.constraint_checks,
                "generations": o.counters.generations,
                "model_s": split.model.as_secs_f64(),
                "checks_s": split.checks.as_secs_f64(),
                "masks_s": split.masks.as_secs_f64(),
                "other_s": other.as_secs_f64(),
                "mass": mass,
                "error": o.error,
            }));
            let _ = writeln!(
                table,
                "| {} | {method} | {} | {:.1} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} |",
                ex.id,
                o.valid(),
                o.secs,
                lcd_s.map_or("–".into(), |l| format!("{:.1}", o.secs / l)),
                o.counters.lm_calls,
                o.counters.forward_tokens,
                o.counters.constraint_checks,
                split.model.as_secs_f64(),
                split.checks.as_secs_f64(),
                split.masks.as_secs_f64(),
                other.as_secs_f64(),
                mass.map_or("–".into(), |m| format!("{m:.1e}")),
                o.note(),
            );
        }
    }
    headless::note!("{table}");
    Ok(())
}

/// One timed run of `method` on a fresh prefilled model (the prefill is not timed).
fn measure(
    model: &Arc<Model>,
    prompt: &[u32],
    c: &DynConstraint<'static>,
    method: Method,
    p: &Params,
    budget_s: f64,
) -> Result<(Outcome, Split)> {
    let mut lm = fresh(model, prompt)?;
    let mut tlm = TimedLm {
        inner: &mut lm,
        clock: Default::default(),
    };
    let tc = TimedConstraint::new(c);
    let o = run_one(method, p, &mut tlm, &tc, 1, Some(budget_s));
    let split = Split {
        model: tlm.clock.get(),
        checks: tc.checks.get(),
        masks: tc.masks.get(),
    };
    Ok((o, split))
}

/// What the run says of P(valid within max tokens): SMC's mean evidence over its runs,
/// or a rejection sampler's valid samples per generation; `None` for the others.
fn mass_estimate(o: &Outcome) -> Option<f64> {
    if !o.evidence.is_empty() {
        let n = o.evidence.len() as f64;
        return Some((logsumexp(o.evidence.values().copied()) - n.ln()).exp());
    }
    let generations = o.counters.generations;
    let exact = o.samples.iter().all(|s| s.weight.is_none());
    (exact && generations > 0 && o.samples.len() as u64 != generations)
        .then(|| o.valid() as f64 / generations as f64)
}
