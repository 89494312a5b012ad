//! `strait score`: log P(text · EOS | prompt) under the model, with the tokens.

use crate::args::ScoreArgs;
use crate::failure::Result;
use headless::Source;

/// Prints `{"text", "tokens", "logp", "token_logps"}` for `--text` after the prompt.
pub fn run(args: &ScoreArgs) -> Result<()> {
    let mut source = Source::load(&args.model.spec())?;
    let prompt = source.prompt_tokens(&args.model.prompt_text()?, args.model.chat)?;
    crate::stdout::line(headless::score::score(&mut source, prompt, &args.text)?);
    Ok(())
}
