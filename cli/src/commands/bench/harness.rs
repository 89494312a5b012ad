//! What the benchmarks share: the example problem, a prefilled real model, run
//! parameters, and one timed, budgeted sampler run with its costs ([`run_one`]).

use crate::constraint_source::build;
use crate::failure::{Failure, Result};
use lm::{Model, PromptedModel};
use sampler_core::samplers::{Counters, Io, Method, Params, Sample, Sampler};
use sampler_core::{
    Constraint, DynConstraint, Event, EventSink, LanguageModel, SeededRng, TokenId, Vocabulary,
    block_on,
};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The example of sections 1 and 4 (`assets/examples/json_x_integer.*`): a JSON Schema
/// and its chat prompt.
pub(super) const EXAMPLE: &str = "assets/examples/json_x_integer";

/// The example grammar of section 1 and its prompt text.
pub(super) fn example(vocab: &Vocabulary) -> Result<(DynConstraint<'static>, String)> {
    let schema = format!("{EXAMPLE}.json");
    let prompt = std::fs::read_to_string(format!("{EXAMPLE}.prompt.txt"))
        .map_err(|e| Failure(format!("{EXAMPLE}.prompt.txt: {e}")))?;
    let args = headless::ConstraintSpec {
        json_schema: Some(Path::new(&schema).to_path_buf()),
        ..headless::ConstraintSpec::default()
    };
    Ok((build(&args, None, vocab)?, prompt))
}

/// The model `--model` names, with `--activations` when given, shared between runs.
pub(super) fn model(args: &crate::args::BenchArgs) -> Result<Arc<Model>> {
    let mut model = Model::load(&args.model)?;
    if let Some(act) = args.activations {
        model.set_activations(act);
    }
    Ok(Arc::new(model))
}

/// A fresh real model conditioned on `prompt`, with the prompt already prefilled.
pub(super) fn fresh(model: &Arc<Model>, prompt: &[TokenId]) -> Result<PromptedModel> {
    let mut lm = PromptedModel::new(model.clone(), prompt.to_vec())?;
    block_on(lm.logprobs(&[]))?;
    Ok(lm)
}

/// Run parameters with the given n, steps, particles and max tokens.
pub(super) fn params(n: usize, steps: usize, particles: usize, max_tokens: usize) -> Params {
    Params {
        n,
        steps,
        particles,
        max_tokens,
        max_generations: 2000,
        ..Params::default()
    }
}

/// What one sampler run produced and cost.
pub(super) struct Outcome {
    /// Every output sample.
    pub(super) samples: Vec<Sample>,
    /// Costs of the run (up to its last sample when it failed); forward tokens exclude
    /// whatever the model had computed before the run.
    pub(super) counters: Counters,
    /// Wall-clock seconds.
    pub(super) secs: f64,
    /// Why the run ended early, if it did.
    pub(super) error: Option<String>,
    /// log Ĝ of each SMC run, by run index.
    pub(super) evidence: HashMap<usize, f64>,
}

impl Outcome {
    /// A run that could not start.
    pub(super) fn failed(msg: String) -> Outcome {
        Outcome {
            samples: Vec::new(),
            counters: Counters::default(),
            secs: 0.0,
            error: Some(msg),
            evidence: HashMap::new(),
        }
    }

    /// Valid outputs with non-zero weight.
    pub(super) fn valid(&self) -> usize {
        self.samples
            .iter()
            .filter(|s| s.valid && s.weight.is_none_or(|w| w > 0.0))
            .count()
    }

    /// The table's note: the error, shortened, or nothing.
    pub(super) fn note(&self) -> String {
        match &self.error {
            None => String::new(),
            Some(e) if e.contains("cancel") || e.contains("stopped") => "T.O. (time)".into(),
            Some(e) => e.chars().take(90).collect::<String>().replace('|', "/"),
        }
    }
}

/// Cancels a run once its time budget is spent; keeps each SMC run's log evidence.
struct Deadline {
    /// When to stop, if ever.
    at: Option<Instant>,
    /// log Ĝ of each SMC run, by run index.
    evidence: HashMap<usize, f64>,
}

impl EventSink for Deadline {
    fn emit(&mut self, event: Event) {
        match event {
            Event::Evidence { run, log_evidence } => {
                self.evidence.insert(run, log_evidence);
            }
            // What auto chose and why, that an exact sampler may not finish, or that every
            // particle of an SMC run died.
            Event::Estimate { message, .. } => headless::note!("strait:   {message}"),
            _ => {}
        }
    }
    fn cancelled(&self) -> bool {
        self.at.is_some_and(|d| Instant::now() >= d)
    }
}

/// Runs `method` once with seed `seed`, stopping after `budget_s` seconds if given.
pub(super) fn run_one<L: LanguageModel, C: Constraint>(
    method: Method,
    p: &Params,
    lm: &mut L,
    c: &C,
    seed: u64,
    budget_s: Option<f64>,
) -> Outcome {
    let base = lm.forward_tokens();
    let mut samples = Vec::new();
    let mut sink = Deadline {
        at: budget_s.map(|s| Instant::now() + Duration::from_secs_f64(s)),
        evidence: HashMap::new(),
    };
    let mut rng = SeededRng::new(seed);
    let t0 = Instant::now();
    let result = block_on(Sampler::new(method).params(p).run(
        lm,
        c,
        Io {
            rng: &mut rng,
            sink: &mut sink,
            out: &mut |s| samples.push(s.clone()),
        },
    ));
    let secs = t0.elapsed().as_secs_f64();
    let (mut counters, error) = match result {
        Ok(k) => (k, None),
        Err(e) => (
            samples.last().map(|s| s.counters).unwrap_or_default(),
            Some(e.to_string()),
        ),
    };
    counters.forward_tokens = counters.forward_tokens.saturating_sub(base);
    Outcome {
        samples,
        counters,
        secs,
        error,
        evidence: sink.evidence,
    }
}
