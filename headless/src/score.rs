//! log P(text · EOS | prompt) under the model, token by token: the line of `strait score`.

use crate::failure::Result;
use crate::model_source::{Source, with_lm};
use sampler_core::{Scored, TokenId, block_on};
use serde_json::Value;

/// `{"text", "tokens", "logp", "token_logps"}` for `text` after `prompt`, EOS appended.
pub fn score(source: &mut Source, prompt: Vec<TokenId>, text: &str) -> Result<Value> {
    let tokens = source.encode(text)?;
    let per_token = with_lm(source, prompt, |lm| {
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
    let scored = Scored {
        text: text.to_string(),
        tokens,
        logp: per_token.iter().sum(),
        token_logps: per_token,
    };
    Ok(serde_json::to_value(scored)?)
}
