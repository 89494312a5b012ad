//! `lcd` on WebGPU with the masks computed there: `lm::gpu::MaskedDecoder` runs the forward
//! pass, the WGSL mask kernel over the regex's tensorized automaton and masked sampling on
//! the GPU; per token only the automaton's edge flags go up and 20 bytes come back. It
//! draws one uniform per token from the same seeded source as the CPU `lcd` sampler, so
//! both paths give the same tokens (the end-to-end test compares them).

use super::backend::GpuLoan;
use super::request::{Ended, Finished, Output, Request, StopCheck, TokenOut};
use lm::gpu::{DecodeMask, MaskedDecoder};
use sampler_core::{
    Constraint, RegexConstraint, SeededRng, TensorizedAutomaton, TokenId, Vocabulary,
};

/// Runs `req` (method `lcd`) on the lent GPU model, streaming tokens to `out`.
#[allow(clippy::too_many_arguments)]
pub async fn generate(
    mut loan: GpuLoan,
    vocab: &Vocabulary,
    constraint: &RegexConstraint,
    automaton: &TensorizedAutomaton,
    req: &Request,
    prompt: &[TokenId],
    out: &mut dyn Output,
    stop: StopCheck,
) -> Result<Finished, Ended> {
    let model = loan.model();
    let gpu_failed = |m: String| format!("WebGPU failed: {m}");
    model.gpu().check().map_err(|e| gpu_failed(e.to_string()))?;
    let decoder = MaskedDecoder::new(model, automaton)
        .await
        .map_err(|e| gpu_failed(e.0))?;
    let eos = vocab.eos();
    let decoding = decoder
        .decode(
            model,
            automaton,
            prompt,
            req.max_tokens,
            DecodeMask::Live,
            &mut SeededRng::new(req.seed),
            |t| {
                let is_eos = t.token == eos;
                out.token(TokenOut {
                    text: if is_eos {
                        String::new()
                    } else {
                        String::from_utf8_lossy(vocab.bytes(t.token)).into_owned()
                    },
                    id: t.token,
                    p: f64::from(t.logp).exp(),
                    z: Some(f64::from(t.log_z).exp()),
                    eos: is_eos,
                });
                !stop()
            },
        )
        .await
        .map_err(|e| {
            if e.0.starts_with("dead end") {
                e.0
            } else {
                gpu_failed(e.0)
            }
        })?;
    if decoding.stopped {
        return Err(Ended::Stopped);
    }
    let tokens: Vec<TokenId> = decoding.tokens.iter().map(|t| t.token).collect();
    let body = tokens.strip_suffix(&[eos]).unwrap_or(&tokens);
    // Checked with the constraint itself, not trusted from the masks.
    let mut state = Some(constraint.initial());
    for &t in body {
        state = state.and_then(|s| constraint.advance(&s, t));
    }
    let valid = decoding.ended && state.is_some_and(|s| constraint.is_complete(&s));
    Ok(Finished {
        text: String::from_utf8_lossy(&vocab.decode(body)).into_owned(),
        valid,
        ended_with_eos: decoding.ended,
        // The decoder starts from an empty cache: every cached position was run once.
        forward_tokens: model.cache_len() as u64,
        gpu_masks: true,
    })
}
