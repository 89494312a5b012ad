//! `strait enumerate`: exact P^L of a finite language, every token sequence (including
//! non-canonical tokenizations) with its probability.

use crate::args::EnumerateArgs;
use crate::failure::Result;
use headless::enumerate::{MAX_SEQUENCES, exact, lines};
use headless::{Source, build};

/// Prints `{"text", "tokens", "logp", "p"}` per sequence, most probable first.
pub fn run(args: &EnumerateArgs) -> Result<()> {
    let mut source = Source::load(&args.model.spec())?;
    let vocab = source.vocabulary();
    let prompt = source.prompt_tokens(&args.model.prompt_text()?, args.model.chat)?;
    let constraint = build(
        &args.constraint.spec(),
        args.grammar_format.as_deref(),
        &vocab,
    )?;
    let dist = exact(
        &mut source,
        prompt,
        &constraint,
        args.max_tokens,
        MAX_SEQUENCES,
    )?;
    for line in lines(&vocab, &dist) {
        crate::stdout::line(line);
    }
    Ok(())
}
