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
    Ok(position_from(ctx, lp, state))
}

/// The position's numbers from the model's answer `lp` there.
fn position_from<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    lp: Vec<f64>,
    state: Option<&C::State>,
) -> Position {
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
    Position {
        z: weights.iter().sum(),
        weights,
        perplexity: entropy.exp(),
        lp,
    }
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
    let mut out = extend_many(ctx, vec![prefix]).await?;
    out.pop().expect("one prefix, one generation")
}

/// A generation under way in [`extend_many`].
struct Growing<S> {
    trace: Trace<S>,
    /// The constraint's state after the trace's tokens (`None`: not viable).
    state: Option<S>,
    /// Whether it has ended (EOS, `max_tokens` or a dead end).
    done: bool,
    /// The dead end it ran into.
    dead_end: Option<SampleError>,
}

/// [`extend`] for several prefixes in lockstep (MCMC's chains of one batch): each step asks
/// the model about every unfinished generation in one batched call, then draws their tokens
/// in order. Each result is what `extend` gives for its prefix with the same random draws;
/// a dead end is that generation's `Err`, the others go on. Other errors end them all.
pub async fn extend_many<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    prefixes: Vec<Trace<C::State>>,
) -> Result<Vec<Result<Trace<C::State>, SampleError>>, SampleError> {
    let eos = ctx.eos();
    ctx.count_generations(prefixes.len());
    let mut gens: Vec<Growing<C::State>> = prefixes
        .into_iter()
        .map(|tr| {
            let state = match tr.tokens.last() {
                None => Some(ctx.initial()),
                Some(&last) => {
                    let before = tr.states.last().cloned().flatten();
                    next_state(ctx, before.as_ref(), last)
                }
            };
            Growing {
                trace: tr,
                state,
                done: false,
                dead_end: None,
            }
        })
        .collect();
    loop {
        for g in gens.iter_mut() {
            g.done = g.done || !within(g.trace.len() + 1, ctx.params().max_tokens);
        }
        let live: Vec<usize> = (0..gens.len()).filter(|&i| !gens[i].done).collect();
        if live.is_empty() {
            break;
        }
        let answers = if let [i] = live[..] {
            vec![ctx.logprobs(&gens[i].trace.tokens).await?]
        } else {
            let prefixes: Vec<&[TokenId]> =
                live.iter().map(|&i| &gens[i].trace.tokens[..]).collect();
            ctx.logprobs_batch(&prefixes).await?
        };
        for (&i, lp) in live.iter().zip(answers) {
            let pos = position_from(ctx, lp, gens[i].state.as_ref());
            let g = &mut gens[i];
            if pos.z <= 0.0 {
                g.dead_end = Some(ctx.dead_end(&g.trace.tokens));
                g.done = true;
                continue;
            }
            let t = ctx.rng().categorical(&pos.weights) as TokenId;
            ctx.emit_token(i, g.trace.len(), t, &pos.lp, Some(pos.z), None);
            let tr = &mut g.trace;
            tr.tokens.push(t);
            tr.logp.push(pos.lp[t as usize]);
            tr.logq.push((pos.weights[t as usize] / pos.z).ln());
            tr.perplexity.push(pos.perplexity);
            let next = next_state(ctx, g.state.as_ref(), t);
            tr.states.push(g.state.take());
            g.state = next;
            g.done = t == eos;
        }
    }
    Ok(gens
        .into_iter()
        .map(|g| match g.dead_end {
            Some(e) => Err(e),
            None => {
                let mut tr = g.trace;
                tr.valid = tr.tokens.last() == Some(&eos) && g.state.is_some();
                Ok(tr)
            }
        })
        .collect())
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
