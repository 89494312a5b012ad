//! `strait sample`: run one sampler and print one JSON line per output sample.

use crate::args::SampleArgs;
use crate::constraint_source::build;
use crate::failure::{Failure, Result};
use crate::model_source::{Source, with_lm};
use sampler_core::hmm::HmmConfig;
use sampler_core::samplers::{Io, Method, Params, Sample, Sampler};
use sampler_core::{Event, EventSink, SeededRng, Vocabulary, block_on};
use serde_json::json;
use std::time::Instant;

/// Parses the method and parameters, builds model and constraint, and runs.
pub fn run(args: &SampleArgs) -> Result<()> {
    let method: Method = args.method.parse().map_err(Failure)?;
    let params = Params {
        n: args.n,
        steps: args.steps,
        particles: args.particles,
        max_tokens: args.max_tokens,
        batch: args.batch,
        hmm: HmmConfig {
            hidden_states: args.hmm_states,
            sequences: args.hmm_sequences,
            em_iterations: args.hmm_iterations,
            ..HmmConfig::default()
        },
        ..Params::default()
    };
    params.hmm.validate()?;
    params.validate()?;
    let hmm_engine = crate::hmm_engine::engine(&args.hmm_engine)?;
    let mut source = Source::load(&args.model)?;
    let vocab = source.vocabulary();
    let prompt = source.prompt_tokens(&args.model)?;
    let constraint = build(&args.constraint, args.grammar_format.as_deref(), &vocab)?;
    let start = Instant::now();
    let mut rng = SeededRng::new(args.seed);
    let mut sink = StdoutSink { on: args.events };
    with_lm(&mut source, prompt, |mut lm| {
        let mut print = |s: &Sample| crate::stdout::line(sample_line(&vocab, s, start));
        block_on(
            Sampler::new(method)
                .params(&params)
                .vocabulary(&vocab)
                .hmm_engine(hmm_engine.as_ref())
                .run(
                    &mut lm,
                    &constraint,
                    Io {
                        rng: &mut rng,
                        sink: &mut sink,
                        out: &mut print,
                    },
                ),
        )?;
        Ok(())
    })
}

/// Writes events as JSON lines on stdout when `--events` is given.
struct StdoutSink {
    on: bool,
}

impl EventSink for StdoutSink {
    fn emit(&mut self, event: Event) {
        if self.on {
            match serde_json::to_string(&event) {
                Ok(line) => crate::stdout::line(line),
                Err(e) => eprintln!("strait: cannot write event: {e}"),
            }
        }
    }
}

/// The contract's line: text, tokens, logp, valid, weight, counters, elapsed_ms (+ run).
fn sample_line(vocab: &Vocabulary, s: &Sample, start: Instant) -> serde_json::Value {
    let mut line = json!({
        "text": String::from_utf8_lossy(&vocab.decode(&s.tokens)),
        "tokens": s.tokens,
        "logp": s.logp,
        "valid": s.valid,
        "weight": s.weight,
        "lm_calls": s.counters.lm_calls,
        "forward_tokens": s.counters.forward_tokens,
        "constraint_checks": s.counters.constraint_checks,
        "elapsed_ms": start.elapsed().as_secs_f64() * 1e3,
    });
    if let Some(r) = s.run {
        line["run"] = json!(r);
    }
    line
}
