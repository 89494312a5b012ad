//! `strait score`: log P(text · EOS | prompt) under the model, with the tokens.

use crate::args::ScoreArgs;
use crate::failure::Result;
use headless::{ModelSpec, Source};

/// Prints `{"text", "tokens", "logp", "token_logps"}` for `--text` after the prompt.
pub fn run(args: &ScoreArgs) -> Result<()> {
    // One sequence: one KV cache on the GPU (not the samplers' eight).
    let spec = ModelSpec {
        gpu_slots: 1,
        ..args.model.spec()
    };
    let mut source = Source::load(&spec)?;
    let prompt = source.prompt_tokens(&args.model.prompt_text()?, args.model.chat)?;
    crate::stdout::line(headless::score::score(&mut source, prompt, &args.text)?);
    Ok(())
}
