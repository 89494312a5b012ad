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
    // Whether each SMC run kept a particle alive (a line of positive weight), by run.
    let mut alive = std::collections::BTreeMap::new();
    sample(
        &mut source,
        prompt,
        &constraint,
        &job,
        args.events,
        &mut |line| {
            if let (Some(run), Some(w)) = (line["run"].as_u64(), line["weight"].as_f64()) {
                *alive.entry(run).or_insert(false) |= w > 0.0;
            }
            crate::stdout::line(line)
        },
    )?;
    let dead: Vec<String> = alive
        .iter()
        .filter(|(_, alive)| !**alive)
        .map(|(run, _)| run.to_string())
        .collect();
    if !dead.is_empty() {
        headless::note!(
            "strait: every particle died in SMC run {} of {}: no particle met the constraint \
             within --max-tokens {} with positive weight, so those lines carry weight 0 (an \
             evidence estimate of 0)",
            dead.join(", "),
            alive.len(),
            job.params.max_tokens
        );
    }
    Ok(())
}
