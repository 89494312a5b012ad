//! `strait enumerate`: exact P^L of a finite language, every token sequence (including
//! non-canonical tokenizations) with its probability.

use crate::args::EnumerateArgs;
use crate::failure::Result;
use headless::Source;
use headless::enumerate::{MAX_SEQUENCES, exact, lines};

/// Prints `{"text", "tokens", "logp", "p"}` per sequence, most probable first.
pub fn run(args: &EnumerateArgs) -> Result<()> {
    let mut source = Source::load(&args.model.spec())?;
    let vocab = source.vocabulary();
    let (prompt, constraint) = source.prompt_and_constraint(
        &args.model.prompt_text()?,
        args.model.chat,
        &args.constraint.spec(),
        args.grammar_format.as_deref(),
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
