//! `strait bench hmm`: P-GCD's HMM work — the distillation's Baum–Welch iterations and the
//! guide's backward table — on every engine this machine has (the CPU reference and the
//! burn tensor programs of `hmm-burn`), on one data set sampled once from the real model,
//! with the time of that sampling beside them (the rest of a distillation's cost). Section
//! 6 of `strait bench samplers` is this table.

use crate::args::BenchArgs;
use crate::failure::{Failure, Result};
use hmm_burn::timing::time_engines;
use lm::{Model, PromptedModel};
use sampler_core::hmm::{Hmm, HmmEngine};
use sampler_core::samplers::pgcd::sample_sequences;
use sampler_core::samplers::{Ctx, Params};
use sampler_core::{LanguageModel, NullSink, RegexConstraint, SeededRng, block_on};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

/// The prompt the training sequences continue (unconstrained).
const PROMPT: &str = "Write one short sentence about the sea.";
/// The constraint whose automaton the guide table multiplies (thousands of word tokens
/// on most edges).
const REGEX: &str = "(The|A) [a-z]+( [a-z]+){0,5}\\.";
/// P-GCD's defaults: sequences, tokens per sequence, EM iterations; the guide's budget.
const SEQUENCES: usize = 16;
const MAX_LEN: usize = 16;
const ITERATIONS: usize = 20;
const BUDGET: usize = 32;
/// Hidden states measured: the default and a larger HMM.
const HIDDEN: [usize; 2] = [16, 64];

/// Prints a JSON line per (hidden states, engine) on stderr and returns the markdown table.
pub fn run(args: &BenchArgs) -> Result<String> {
    let model = Arc::new(Model::load(&args.model)?);
    let vocab = model.tokenizer().vocabulary();
    let c =
        RegexConstraint::from_regex(REGEX, &vocab).map_err(|e| Failure(format!("{REGEX}: {e}")))?;
    let tensor = c
        .tensorized()
        .ok_or_else(|| Failure(format!("{REGEX}: no tensorized automaton")))?;
    let prompt = model.tokenizer().encode_prompt(PROMPT, true)?;
    let mut lm = PromptedModel::new(model.clone(), prompt)?;
    block_on(lm.logprobs(&[]))?;

    let started = Instant::now();
    let (params, mut rng, mut sink) = (Params::default(), SeededRng::new(1), NullSink);
    let mut out = |_: &_| {};
    let mut ctx = Ctx::new(&mut lm, &c, &mut rng, &mut sink, &params, None, &mut out);
    let data = block_on(sample_sequences(&mut ctx, SEQUENCES, MAX_LEN))?;
    let sampling = started.elapsed().as_secs_f64();
    let tokens: usize = data.iter().map(Vec::len).sum();

    let engines: Vec<Box<dyn HmmEngine>> = crate::hmm_engine::available();
    let mut table = format!(
        "Training data: {SEQUENCES} sequences of at most {MAX_LEN} tokens sampled once from \
         SmolLM2 after the chat prompt {PROMPT:?} ({tokens} tokens, {sampling:.1} s: the \
         model's part of every distillation, the same whatever the engine). Then, per \
         engine: {ITERATIONS} Baum–Welch iterations from the same start, and the guide's \
         backward table for the regex `{REGEX}` ({} automaton states, {} edges, {} tokens \
         on edges) with a budget of {BUDGET} tokens. *distillation s* = sampling + EM. \
         *max |Δθ|*: the largest difference of any HMM parameter from the cpu engine's after \
         the {ITERATIONS} iterations; *max |Δ log C|*: of any finite table entry, relative \
         to max(1, |log C|). Engines: `cpu`, the f64 loops of `sampler-core`; `burn-flex`, \
         burn's CPU backend; `burn-wgpu`, burn on wgpu (here {}).\n\n\
         | H | engine | EM s | × cpu | guide table s | × cpu | distillation s | max Δθ | max Δ log C |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
        tensor.num_states,
        tensor.num_edges(),
        tensor
            .bf
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>(),
        adapter_note(&engines),
    );
    for hidden in HIDDEN {
        let start = Hmm::init_from_data(hidden, vocab.len(), &data, 1e-2, &mut SeededRng::new(3));
        let refs: Vec<&dyn HmmEngine> = engines.iter().map(|e| e.as_ref()).collect();
        let rows = time_engines(&refs, &start, &data, ITERATIONS, tensor, BUDGET);
        let (em0, table0) = (rows[0].em_s, rows[0].table_s);
        for r in rows {
            let (name, em, tab) = (&r.engine, r.em_s, r.table_s);
            if let Some(e) = &r.error {
                headless::note!("strait: bench hmm: {name}, H = {hidden}: {e}");
                let _ = writeln!(table, "| {hidden} | {name} | failed: {e} | | | | | | |");
                continue;
            }
            headless::note!(
                "{{\"bench\":\"hmm\",\"hidden\":{hidden},\"engine\":\"{name}\",\"em_s\":{em:.4},\
                 \"table_s\":{tab:.4},\"sampling_s\":{sampling:.3}}}"
            );
            let _ = writeln!(
                table,
                "| {hidden} | {name} | {em:.3} | {:.2} | {tab:.3} | {:.2} | {:.2} | {:.1e} | {:.1e} |",
                em / em0,
                tab / table0,
                sampling + em,
                r.max_param_diff,
                r.max_table_diff,
            );
        }
    }
    Ok(table)
}

/// What the wgpu engine ran on, or that it did not.
fn adapter_note(engines: &[Box<dyn HmmEngine>]) -> String {
    if engines.iter().any(|e| e.name().contains("wgpu")) {
        "the machine's default wgpu adapter; without a GPU, Mesa's lavapipe on the CPU".into()
    } else {
        "not measured: no wgpu adapter".into()
    }
}
