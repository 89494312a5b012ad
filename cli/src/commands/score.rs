//! `strait score`: log P(text · EOS | prompt) under the model, with the tokens.

use crate::args::ScoreArgs;
use crate::failure::Result;
use crate::model_source::{Source, with_lm};
use sampler_core::block_on;
use serde_json::json;

/// Prints `{"text", "tokens", "logp", "token_logps"}` for `--text` after the prompt.
pub fn run(args: &ScoreArgs) -> Result<()> {
    let mut source = Source::load(&args.model)?;
    let prompt = source.prompt_tokens(&args.model)?;
    let tokens = source.encode(&args.text)?;
    let per_token = with_lm(&mut source, prompt, |lm| {
        let eos = lm.dyn_eos();
        let mut out = Vec::with_capacity(tokens.len() + 1);
        let mut prefix = Vec::with_capacity(tokens.len());
        for &t in tokens.iter().chain(std::iter::once(&eos)) {
            let lp = block_on(lm.dyn_logprobs(&prefix))?;
            out.push(lp[t as usize]);
            prefix.push(t);
        }
        Ok(out)
    })?;
    let line = json!({
        "text": args.text,
        "tokens": tokens,
        "logp": per_token.iter().sum::<f64>(),
        "token_logps": per_token,
    });
    crate::stdout::line(line);
    Ok(())
}
