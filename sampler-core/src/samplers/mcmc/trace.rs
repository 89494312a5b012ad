//! A sequence with the per-position numbers MCMC needs to score proposals in both
//! directions: log P and log Q_GCD of each token, the perplexity of each next-token
//! distribution, and the constraint state before each token.

use crate::samplers::Ctx;
use crate::samplers::cut::within;
use crate::{Constraint, LanguageModel, SampleError, TokenId};

/// A token sequence scored position by position under the LM and the GCD proposal.
#[derive(Clone, Debug)]
pub struct Trace<S> {
    /// The tokens, EOS included when the sequence ended.
    pub tokens: Vec<TokenId>,
    /// log P(w_t | w_<t) under the unconstrained model.
    pub logp: Vec<f64>,
    /// log Q_GCD(w_t | w_<t): the token's probability under token masking (−∞ if masked).
    pub logq: Vec<f64>,
    /// Perplexity exp(H) of P(· | w_<t), the weight of cut t for `mcmc-priority`.
    pub perplexity: Vec<f64>,
    /// Constraint state before token t (`None` once the prefix is not viable).
    pub states: Vec<Option<S>>,
    /// Whether the sequence ends with EOS and satisfies the constraint.
    pub valid: bool,
}

impl<S> Trace<S> {
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// log P of the whole sequence.
    pub fn total_logp(&self) -> f64 {
        self.logp.iter().sum()
    }
}

impl<S: Clone> Trace<S> {
    /// The empty sequence, before any token.
    pub fn empty() -> Self {
        Trace {
            tokens: Vec::new(),
            logp: Vec::new(),
            logq: Vec::new(),
            perplexity: Vec::new(),
            states: Vec::new(),
            valid: false,
        }
    }

    /// The first `i` positions (what a cut at `i` keeps); not valid (no EOS).
    pub fn truncate(&self, i: usize) -> Self {
        Trace {
            tokens: self.tokens[..i].to_vec(),
            logp: self.logp[..i].to_vec(),
            logq: self.logq[..i].to_vec(),
            perplexity: self.perplexity[..i].to_vec(),
            states: self.states[..i].to_vec(),
            valid: false,
        }
    }
}

/// The next-token numbers at one position: masked weights and their sum, perplexity.
struct Position {
    lp: Vec<f64>,
    weights: Vec<f64>,
    z: f64,
    perplexity: f64,
}

async fn position<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    tokens: &[TokenId],
    state: Option<&C::State>,
) -> Result<Position, SampleError> {
    let lp = ctx.logprobs(tokens).await?;
    let mask = state.map(|s| ctx.mask(s));
    let weights: Vec<f64> = lp
        .iter()
        .enumerate()
        .map(|(t, l)| match &mask {
            Some(m) if m.contains(t as TokenId) => l.exp(),
            _ => 0.0,
        })
        .collect();
    let entropy: f64 = lp
        .iter()
        .map(|&l| {
            if l > f64::NEG_INFINITY {
                -l.exp() * l
            } else {
                0.0
            }
        })
        .sum();
    Ok(Position {
        z: weights.iter().sum(),
        weights,
        perplexity: entropy.exp(),
        lp,
    })
}

/// The state after `t` (EOS keeps the state when complete, `None` otherwise).
fn next_state<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    state: Option<&C::State>,
    t: TokenId,
) -> Option<C::State> {
    let s = state?;
    if t == ctx.eos() {
        ctx.is_complete(s).then(|| s.clone())
    } else {
        ctx.advance(s, t)
    }
}

/// Continues `prefix` with GCD (token masking) until EOS or `max_tokens`, recording every
/// position; one generation. A dead end (no allowed mass) is [`SampleError::DeadEnd`].
pub async fn extend<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    prefix: Trace<C::State>,
) -> Result<Trace<C::State>, SampleError> {
    let eos = ctx.eos();
    ctx.count_generations(1);
    let mut tr = prefix;
    let mut state = match tr.tokens.last() {
        None => Some(ctx.initial()),
        Some(&last) => {
            let before = tr.states.last().cloned().flatten();
            next_state(ctx, before.as_ref(), last)
        }
    };
    while within(tr.len() + 1, ctx.params().max_tokens) {
        let pos = position(ctx, &tr.tokens, state.as_ref()).await?;
        if pos.z <= 0.0 {
            return Err(ctx.dead_end(&tr.tokens));
        }
        let t = ctx.rng().categorical(&pos.weights) as TokenId;
        ctx.emit_token(0, tr.len(), t, &pos.lp, Some(pos.z), None);
        tr.tokens.push(t);
        tr.logp.push(pos.lp[t as usize]);
        tr.logq.push((pos.weights[t as usize] / pos.z).ln());
        tr.perplexity.push(pos.perplexity);
        let next = next_state(ctx, state.as_ref(), t);
        tr.states.push(state);
        state = next;
        if t == eos {
            break;
        }
    }
    tr.valid = tr.tokens.last() == Some(&eos) && state.is_some();
    Ok(tr)
}

/// Scores a given sequence position by position (no generation is counted).
pub async fn score<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    tokens: &[TokenId],
) -> Result<Trace<C::State>, SampleError> {
    let eos = ctx.eos();
    let mut tr = Trace::empty();
    let mut state = Some(ctx.initial());
    for &t in tokens {
        let pos = position(ctx, &tr.tokens, state.as_ref()).await?;
        tr.tokens.push(t);
        tr.logp.push(pos.lp[t as usize]);
        tr.logq.push(if pos.z > 0.0 {
            (pos.weights[t as usize] / pos.z).ln()
        } else {
            f64::NEG_INFINITY
        });
        tr.perplexity.push(pos.perplexity);
        let next = next_state(ctx, state.as_ref(), t);
        tr.states.push(state);
        state = next;
    }
    tr.valid = tr.tokens.last() == Some(&eos)
        && state.is_some()
        && tokens.iter().filter(|&&t| t == eos).count() == 1;
    Ok(tr)
}
