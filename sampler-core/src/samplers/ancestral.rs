//! `lm` (unconstrained ancestral sampling) and `lcd` (token masking), and the shared
//! masked-generation step other samplers (MCMC, SMC) reuse.

use super::Ctx;
use super::cut::within;
use crate::exp::exp64;
use crate::{Constraint, LanguageModel, SampleError, TokenId};

/// One generated sequence and what it cost to make.
#[derive(Clone, Debug)]
pub struct Generation {
    /// The tokens, EOS included when the sequence ended.
    pub tokens: Vec<TokenId>,
    /// log P(tokens) under the unconstrained model.
    pub logp: f64,
    /// log Q(tokens): the probability the proposal gave this continuation.
    pub log_q: f64,
    /// Whether the tokens satisfy the constraint and end with EOS.
    pub valid: bool,
}

/// How each token is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Masking {
    /// From P; the constraint is only checked.
    None,
    /// From P restricted to viable tokens (LCD / GCD).
    Viable,
    /// From P restricted to tokens completable within the remaining budget (seed 001).
    Budget,
}

/// Generates from `prefix` (whose constraint state is `state`) until EOS or `max_tokens`,
/// choosing tokens per `masking`. `log_q` covers only the generated suffix.
pub async fn generate<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    prefix: &[TokenId],
    state: Option<C::State>,
    masking: Masking,
    particle: usize,
) -> Result<Generation, SampleError> {
    let eos = ctx.eos();
    let mut tokens = prefix.to_vec();
    let mut state = state;
    let (mut logp, mut log_q) = (0.0, 0.0);
    ctx.count_generations(1);
    while within(tokens.len() + 1, ctx.params().max_tokens) {
        let lp = ctx.logprobs(&tokens).await?;
        let allowed = match (masking, &state) {
            (Masking::None, _) => None,
            (_, None) => return Err(ctx.dead_end(&tokens)),
            (Masking::Viable, Some(s)) => Some(ctx.mask(s)),
            (Masking::Budget, Some(s)) => {
                let remaining = ctx.params().max_tokens - tokens.len();
                Some(ctx.budget_mask(s, remaining)?)
            }
        };
        let weights: Vec<f64> = lp
            .iter()
            .enumerate()
            .map(|(t, l)| match &allowed {
                Some(m) if !m.contains(t as TokenId) => 0.0,
                _ => exp64(*l),
            })
            .collect();
        let z: f64 = weights.iter().sum();
        if z <= 0.0 {
            return Err(ctx.dead_end(&tokens));
        }
        let t = ctx.rng().categorical(&weights) as TokenId;
        let kept = allowed.as_ref().map(|_| z);
        ctx.emit_token(particle, tokens.len(), t, &lp, kept, allowed.as_ref());
        logp += lp[t as usize];
        log_q += (weights[t as usize] / z).ln();
        state = match &state {
            Some(s) if t != eos => ctx.advance(s, t),
            Some(s) => ctx.is_complete(s).then(|| s.clone()),
            None => None,
        };
        tokens.push(t);
        if t == eos {
            break;
        }
    }
    let valid = tokens.last() == Some(&eos) && state.is_some();
    Ok(Generation {
        tokens: tokens[prefix.len()..].to_vec(),
        logp,
        log_q,
        valid,
    })
}

/// `lm` / `lcd` / `gcd-budget`: `n` independent sequences, each printed.
pub async fn run<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    masking: Masking,
) -> Result<(), SampleError> {
    for _ in 0..ctx.params().n {
        let init = Some(ctx.initial());
        let g = generate(ctx, &[], init, masking, 0).await?;
        ctx.finish(g.tokens, g.logp, g.valid, None, None)?;
    }
    Ok(())
}
