//! [`MaskedDecoder`]: token-masking decoding with every per-token step on the GPU.
//!
//! For a regular constraint compiled to a [`TensorizedAutomaton`], each step runs the
//! forward pass (logits stay in the output head's buffer), the mask kernel
//! ([`TokenMask`]: the OR of the B_f rows of the edges flagged live, or completable
//! within the remaining budget, from the current states α), and masked sampling
//! ([`MaskedSample`]: log Z and an inverse-CDF draw at a uniform `u`), all in one compute
//! pass and one submission per token. Only the edge flags go up (4 bytes per edge) and 20
//! bytes come back per token (the draw, log Z, and the drawn token's logit for its
//! probability), in one read-back; α is advanced on the CPU.
//! [`masked_decode_reference`] is the same loop on the CPU, the test's reference.

use super::model::GpuModel;
use crate::forward::log_softmax;
use crate::prompted::PromptedModel;
use sampler_core::{LmError, RandomSource, TensorizedAutomaton, TokenId};
use shaders::{
    GpuError, MaskedSample, MaskedSampleBinding, TokenMask, masked_sample_reference, wgpu,
};

/// Which tokens a step keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeMask {
    /// Tokens that keep the constraint satisfiable (`lcd`).
    Live,
    /// Tokens after which the constraint can still be completed within the remaining
    /// tokens of the budget (`gcd-budget`, seed 001).
    Budget,
}

/// One generated token: the token, its log-probability under the model and the log of
/// the mass the mask kept at its step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecodedToken {
    /// The token drawn.
    pub token: TokenId,
    /// log P(token | prefix) under the unconstrained model.
    pub logp: f32,
    /// log Z: the log of the model's probability mass on the tokens the mask kept.
    pub log_z: f32,
}

/// A finished decoding.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoding {
    /// The tokens drawn, EOS included when the sequence ended.
    pub tokens: Vec<DecodedToken>,
    /// Whether it ended with EOS (else it reached the token budget or was stopped).
    pub ended: bool,
    /// Whether `on_token` asked to stop.
    pub stopped: bool,
}

/// The largest `f32` below 1: uniforms are drawn in f64 and must stay in `[0, 1)`.
const BELOW_ONE: f32 = 0.999_999_94;

fn uniform_f32(rng: &mut impl RandomSource) -> f32 {
    (rng.uniform() as f32).min(BELOW_ONE)
}

fn remaining_for(mask: DecodeMask, automaton: &TensorizedAutomaton, left: usize) -> usize {
    match mask {
        DecodeMask::Budget => left,
        // Every live state completes within `num_states` tokens.
        DecodeMask::Live => automaton.num_states + 1,
    }
}

fn dead_end(prefix: &[DecodedToken]) -> LmError {
    let ids: Vec<String> = prefix.iter().map(|t| t.token.to_string()).collect();
    LmError(format!(
        "dead end after [{}]: the mask keeps no token",
        ids.join(", ")
    ))
}

/// The GPU side of masked decoding for one automaton: B_f uploaded once, the mask and
/// sampling kernels bound to the model's logits buffer.
pub struct MaskedDecoder {
    mask: TokenMask,
    sample: MaskedSample,
    flags: wgpu::Buffer,
    mask_bind: wgpu::BindGroup,
    sample_bind: MaskedSampleBinding,
    words: usize,
    // Kept alive for the bind groups.
    _bf: wgpu::Buffer,
    _mask_words: wgpu::Buffer,
    _dims: wgpu::Buffer,
}

impl std::fmt::Debug for MaskedDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaskedDecoder")
            .field("words", &self.words)
            .finish_non_exhaustive()
    }
}

impl MaskedDecoder {
    /// Compiles the kernels and uploads `automaton`'s B_f for `model`'s GPU; the automaton
    /// must be over the model's vocabulary.
    pub async fn new(
        model: &GpuModel,
        automaton: &TensorizedAutomaton,
    ) -> Result<MaskedDecoder, LmError> {
        let vocab = model.config().vocab_size;
        if automaton.vocab_size != vocab {
            return Err(LmError(format!(
                "the automaton is over {} tokens, the model has {vocab}",
                automaton.vocab_size
            )));
        }
        let gpu = model.gpu();
        let e = |e: GpuError| LmError(e.to_string());
        let words = automaton.words_per_row;
        let mask = TokenMask::new(gpu).await.map_err(e)?;
        let sample = MaskedSample::new(gpu).await.map_err(e)?;
        let flags = gpu
            .storage(
                "decode flags",
                &shaders::u32_bytes(&vec![0; automaton.num_edges().max(1)]),
            )
            .map_err(e)?;
        let bf = gpu
            .storage("decode bf", &shaders::u32_bytes(&automaton.bf))
            .map_err(e)?;
        let mask_words = gpu.zeroed("decode mask", words).map_err(e)?;
        let dims = TokenMask::dims(gpu, automaton.num_edges(), words);
        let mask_bind = mask.bind(gpu, &flags, &bf, &mask_words, &dims);
        let sample_bind = sample
            .bind(gpu, model.logits_buffer(), 0, &mask_words, vocab)
            .map_err(e)?;
        Ok(MaskedDecoder {
            mask,
            sample,
            flags,
            mask_bind,
            sample_bind,
            words,
            _bf: bf,
            _mask_words: mask_words,
            _dims: dims,
        })
    }

    /// Decodes after `prompt` (the model's cache is reset) until EOS or `max_tokens`,
    /// calling `on_token` after each token (`false` stops the decoding); a step whose
    /// mask keeps nothing ends with "dead end after …".
    #[allow(clippy::too_many_arguments)]
    pub async fn decode(
        &self,
        model: &mut GpuModel,
        automaton: &TensorizedAutomaton,
        prompt: &[TokenId],
        max_tokens: usize,
        mask: DecodeMask,
        rng: &mut impl RandomSource,
        mut on_token: impl FnMut(&DecodedToken) -> bool,
    ) -> Result<Decoding, LmError> {
        let gpu = model.gpu().clone();
        let e = |e: GpuError| LmError(e.to_string());
        model.truncate(0);
        let mut alpha = automaton.initial_alpha();
        let mut pending = prompt.to_vec();
        let mut out = Vec::new();
        for t in 0..max_tokens {
            // The flags and u are queued before the submission that reads them.
            let remaining = remaining_for(mask, automaton, max_tokens - t);
            gpu.write_words(&self.flags, 0, &automaton.edge_flags(&alpha, remaining));
            self.sample
                .set_u(&gpu, &self.sample_bind, uniform_f32(rng))
                .map_err(e)?;
            model.forward_resident_then(&pending, |pass| {
                self.mask.dispatch(pass, &self.mask_bind, self.words);
                self.sample.dispatch(pass, &self.sample_bind);
            })?;
            let draw = match self.sample.read(&gpu, &self.sample_bind).await {
                Ok(d) => d,
                Err(GpuError::AllMasked) => return Err(dead_end(&out)),
                Err(err) => return Err(e(err)),
            };
            let tok = DecodedToken {
                token: draw.token,
                logp: draw.logit - draw.log_all,
                log_z: draw.log_z,
            };
            let go_on = on_token(&tok);
            out.push(tok);
            let ended = draw.token == automaton.eos;
            if ended || !go_on {
                return Ok(Decoding {
                    tokens: out,
                    ended,
                    stopped: !go_on,
                });
            }
            alpha = automaton.forward(&alpha, draw.token);
            pending = vec![draw.token];
        }
        Ok(Decoding {
            tokens: out,
            ended: false,
            stopped: false,
        })
    }
}

/// The CPU reference of [`MaskedDecoder::decode`]: the CPU forward pass, the mask from the
/// same edge flags, and [`masked_sample_reference`] at the same uniforms.
pub fn masked_decode_reference(
    model: &mut PromptedModel,
    automaton: &TensorizedAutomaton,
    max_tokens: usize,
    mask: DecodeMask,
    rng: &mut impl RandomSource,
) -> Result<Decoding, LmError> {
    let mut alpha = automaton.initial_alpha();
    let mut prefix = Vec::new();
    let mut out = Vec::new();
    for t in 0..max_tokens {
        let logits = model.logits(&prefix)?;
        let remaining = remaining_for(mask, automaton, max_tokens - t);
        let words = automaton.mask_from_edge_flags(&automaton.edge_flags(&alpha, remaining));
        let Some(draw) = masked_sample_reference(&logits, &words, uniform_f32(rng)) else {
            return Err(dead_end(&out));
        };
        out.push(DecodedToken {
            token: draw.token,
            logp: log_softmax(&logits)[draw.token as usize] as f32,
            log_z: draw.log_z,
        });
        if draw.token == automaton.eos {
            return Ok(Decoding {
                tokens: out,
                ended: true,
                stopped: false,
            });
        }
        alpha = automaton.forward(&alpha, draw.token);
        prefix.push(draw.token);
    }
    Ok(Decoding {
        tokens: out,
        ended: false,
        stopped: false,
    })
}
