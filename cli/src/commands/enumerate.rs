//! `strait enumerate`: exact P^L of a finite language, every token sequence (including
//! non-canonical tokenizations) with its probability.

use crate::args::EnumerateArgs;
use crate::constraint_source::build;
use crate::failure::Result;
use crate::model_source::{Source, with_lm};
use sampler_core::block_on;
use sampler_core::exact::{Limits, enumerate};
use serde_json::json;

/// Most sequences listed before refusing ("too large to enumerate").
const MAX_SEQUENCES: usize = 100_000;

/// Prints `{"text", "tokens", "logp", "p"}` per sequence, most probable first.
pub fn run(args: &EnumerateArgs) -> Result<()> {
    let mut source = Source::load(&args.model)?;
    let vocab = source.vocabulary();
    let prompt = source.prompt_tokens(&args.model)?;
    let constraint = build(&args.constraint, args.grammar_format.as_deref(), &vocab)?;
    let limits = Limits {
        max_tokens: args.max_tokens,
        max_sequences: MAX_SEQUENCES,
    };
    let dist = with_lm(&mut source, prompt, |mut lm| {
        Ok(block_on(enumerate(&mut lm, &constraint, limits))?)
    })?;
    let mut entries: Vec<_> = dist.entries.iter().collect();
    entries.sort_by(|a, b| b.p.total_cmp(&a.p));
    for e in entries {
        let line = json!({
            "text": String::from_utf8_lossy(&vocab.decode(&e.tokens)),
            "tokens": e.tokens,
            "logp": e.logp,
            "p": e.p,
        });
        crate::stdout::line(line);
    }
    Ok(())
}
