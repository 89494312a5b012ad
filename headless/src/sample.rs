//! One sampler run over a loaded model: the lines `strait sample` prints, one per output
//! sample (docs/cli.md, "Output lines").

use crate::failure::Result;
use crate::model_source::{Source, with_lm};
use sampler_core::samplers::{Counters, Io, Method, Params, Sample, Sampler};
use sampler_core::{
    DynConstraint, Event, EventSink, Record, SampleRequest, SeededRng, TokenId, Vocabulary,
    block_on,
};
use serde_json::Value;
use std::time::Instant;

/// What to run: the sampler, its parameters, the seed, and where P-GCD's HMM work runs.
#[derive(Clone, Debug)]
pub struct SampleJob {
    /// The sampler.
    pub method: Method,
    /// n, steps, particles, max tokens, batch, the HMM's settings.
    pub params: Params,
    /// Seed of every random choice: the same seed gives the same run.
    pub seed: u64,
    /// `--hmm-engine` (`burn-flex`, `cpu`, …; see [`crate::hmm_engine`]).
    pub hmm_engine: String,
}

impl SampleJob {
    /// `method` with the default parameters, seed 0, HMM work on burn-flex.
    pub fn new(method: Method) -> SampleJob {
        SampleJob {
            method,
            params: Params::default(),
            seed: 0,
            hmm_engine: "burn-flex".into(),
        }
    }
}

impl SampleJob {
    /// The job a [`SampleRequest`] names (its sampler, parameters, seed, HMM engine), checked
    /// before any model is read.
    pub fn from_request(request: &SampleRequest) -> Result<SampleJob> {
        let job = SampleJob {
            method: request.sampler()?,
            params: request.params()?,
            seed: request.seed,
            hmm_engine: request.hmm_engine.clone(),
        };
        crate::hmm_engine::engine(&job.hmm_engine)?;
        Ok(job)
    }
}

/// Runs a whole [`SampleRequest`] on `source` (Python's `Model.sample`): its prompt, its
/// constraint (given as text) and its job, as [`sample`] does.
pub fn sample_request(
    source: &mut Source,
    request: &SampleRequest,
    events: bool,
    out: &mut dyn FnMut(Value),
) -> Result<Counters> {
    let job = SampleJob::from_request(request)?;
    let (prompt, constraint) = source.request_prompt_and_constraint(request)?;
    sample(source, prompt, &constraint, &job, events, out)
}

/// Runs `job` on `source` conditioned on `prompt`: each output sample is handed to `out` as
/// its line, each event too when `events` is set (a line with a `type` field). Returns the
/// run's final counters.
pub fn sample(
    source: &mut Source,
    prompt: Vec<TokenId>,
    constraint: &DynConstraint<'static>,
    job: &SampleJob,
    events: bool,
    out: &mut dyn FnMut(Value),
) -> Result<Counters> {
    sample_counted(source, prompt, constraint, job, events, out).map_err(|(e, _)| e)
}

/// [`sample`], whose error also carries what the run had cost when it failed (a sweep keeps
/// it in the cell's row).
pub fn sample_counted(
    source: &mut Source,
    prompt: Vec<TokenId>,
    constraint: &DynConstraint<'static>,
    job: &SampleJob,
    events: bool,
    out: &mut dyn FnMut(Value),
) -> std::result::Result<Counters, (crate::Failure, Counters)> {
    let none = |e: crate::Failure| (e, Counters::default());
    job.params.hmm.validate().map_err(|e| none(e.into()))?;
    job.params.validate().map_err(|e| none(e.into()))?;
    let hmm_engine = crate::hmm_engine::engine(&job.hmm_engine).map_err(none)?;
    fits_context(source, prompt.len(), job.params.max_tokens).map_err(none)?;
    let vocab = source.vocabulary();
    let start = Instant::now();
    let mut rng = SeededRng::new(job.seed);
    // Events and samples go to one callback, in the order they happen.
    let out = std::cell::RefCell::new(out);
    let mut sink = LineSink {
        on: events,
        out: &out,
        counters: Counters::default(),
    };
    let result = with_lm(source, prompt, |mut lm| {
        let mut print = |s: &Sample| (out.borrow_mut())(sample_line(&vocab, s, start));
        Ok(block_on(
            Sampler::new(job.method)
                .params(&job.params)
                .vocabulary(&vocab)
                .hmm_engine(hmm_engine.as_ref())
                .run(
                    &mut lm,
                    constraint,
                    Io {
                        rng: &mut rng,
                        sink: &mut sink,
                        out: &mut print,
                    },
                ),
        )?)
    });
    result.map_err(|e| (e, sink.counters))
}

/// `Err` when a run of up to `max_tokens` tokens after a prompt of `prompt` tokens could
/// outgrow the model's context: its last model call conditions on the prompt and
/// `max_tokens - 1` generated tokens. Refused before the run, since otherwise whether it
/// fails depends on the lengths it draws, and only after the prefill and the draws.
fn fits_context(source: &Source, prompt: usize, max_tokens: usize) -> Result<()> {
    let Source::Real(backend) = source else {
        return Ok(());
    };
    let Some((context, what)) = backend.context() else {
        return Ok(());
    };
    let longest = prompt.saturating_add(max_tokens.saturating_sub(1));
    if longest <= context {
        return Ok(());
    }
    crate::failure::fail(format!(
        "a prompt of {prompt} tokens and up to {max_tokens} generated tokens need {longest} \
         positions, more than {what} of {context}: lower the max tokens (--max-tokens) to {} \
         or shorten the prompt",
        (context + 1).saturating_sub(prompt).max(1)
    ))
}

/// Hands events to the output as JSON lines when `--events` is given.
struct LineSink<'a, 'b> {
    on: bool,
    out: &'a std::cell::RefCell<&'b mut dyn FnMut(Value)>,
    /// The latest counters the run published (what it cost, should it fail).
    counters: Counters,
}

impl EventSink for LineSink<'_, '_> {
    fn emit(&mut self, event: Event) {
        // What auto chose, that an exact sampler may not finish, or that every particle of
        // an SMC run died: always said, on stderr.
        if let Event::Estimate { message, .. } = &event {
            crate::note!("strait: {message}");
        }
        if self.on {
            match serde_json::to_value(&event) {
                Ok(line) => (self.out.borrow_mut())(line),
                Err(e) => crate::note!("strait: cannot write event: {e}"),
            }
        }
    }

    fn progress(&mut self, counters: &Counters) {
        self.counters = *counters;
    }
}

/// The contract's line: text, tokens, logp, valid, weight, counters, elapsed_ms (+ run):
/// the one [`Record`] every front end hands out.
pub fn sample_line(vocab: &Vocabulary, s: &Sample, start: Instant) -> Value {
    let r = Record::new(vocab, s, start.elapsed().as_secs_f64() * 1e3);
    serde_json::to_value(r).expect("a record is JSON")
}
