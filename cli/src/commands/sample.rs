//! `strait sample`: run one sampler and print one JSON line per output sample.

use crate::args::SampleArgs;
use crate::failure::Result;
use headless::{SampleJob, Source, sample};
use sampler_core::SampleRequest;

/// Parses the method and parameters, builds model and constraint, and runs.
pub fn run(args: &SampleArgs) -> Result<()> {
    // The request every front end reads (its constraint and prompt come from files here);
    // bad parameters are refused before the model is read.
    let request = SampleRequest {
        method: args.method.clone(),
        n: args.n,
        seed: args.seed,
        max_tokens: args.max_tokens,
        particles: args.particles,
        steps: args.steps,
        batch: args.batch,
        max_generations: args.max_generations,
        generation_cap: args.generation_cap,
        hmm_engine: args.hmm_engine.clone(),
        hmm_states: Some(args.hmm_states),
        hmm_sequences: Some(args.hmm_sequences),
        hmm_iterations: Some(args.hmm_iterations),
        ..SampleRequest::default()
    };
    let job = SampleJob::from_request(&request)?;
    let mut source = Source::load(&args.model.spec())?;
    let (prompt, constraint) = source.prompt_and_constraint(
        &args.model.prompt_text()?,
        args.model.chat,
        &args.constraint.spec(),
        args.grammar_format.as_deref(),
    )?;
    // An SMC run whose every particle died is said on stderr by the sampler's own
    // `Estimate` event.
    sample(
        &mut source,
        prompt,
        &constraint,
        &job,
        args.events,
        &mut |line| crate::stdout::line(line),
    )?;
    Ok(())
}
