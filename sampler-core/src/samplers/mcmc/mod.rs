//! Grammar-aligned MCMC (seed 000 Alg. 1): a Metropolis-Hastings chain over valid
//! sequences whose proposal truncates the current state and regenerates with GCD.
//!
//! # Key types
//! - [`Trace`]: a sequence scored per position (log P, log Q_GCD, perplexity, states).
//! - [`Truncation`]: Uniform, Priority or Restart cut distribution.
//! - [`Kernel`]: one MH transition; [`step`] applies it, [`run`] runs `--n` chains.

mod proposal;
mod trace;

pub use proposal::{
    Truncation, common_prefix, cut_distribution, log_proposal, log_proposal_drawn_cut,
};
pub use trace::{Trace, extend, extend_many, score};

use super::Ctx;
use crate::{Constraint, Event, LanguageModel, SampleError};

/// How the acceptance ratio scores the proposal in both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProposalScore {
    /// q(w'|w) summed over every cut the two sequences share (seed 000, docs/samplers.md).
    AllCuts,
    /// p_pos(i)·Q(suffix) for the drawn cut i only, in both directions: MH on the space
    /// extended with the cut, also exact (its test shows P^L stays stationary).
    DrawnCut,
    /// Test-only mutant: the ratio P(w')/P(w) without q (Metropolis without Hastings),
    /// so a test shows the stationarity check catches a broken ratio.
    #[cfg(any(test, feature = "mutants"))]
    Ignored,
}

/// One Metropolis-Hastings transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The cut distribution.
    pub truncation: Truncation,
    /// How q enters the acceptance ratio.
    pub score: ProposalScore,
}

impl Kernel {
    /// The paper's kernel for a truncation (q summed over every shared cut).
    pub fn new(truncation: Truncation) -> Self {
        Kernel {
            truncation,
            score: ProposalScore::AllCuts,
        }
    }

    fn log_q<S>(&self, from: &Trace<S>, to: &Trace<S>, cut: usize) -> f64 {
        match self.score {
            ProposalScore::AllCuts => log_proposal(self.truncation, from, to),
            ProposalScore::DrawnCut => log_proposal_drawn_cut(self.truncation, from, to, cut),
            #[cfg(any(test, feature = "mutants"))]
            ProposalScore::Ignored => 0.0,
        }
    }
}

/// The chain's first state: a GCD sample (one generation).
pub async fn initial<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
) -> Result<Trace<C::State>, SampleError> {
    extend(ctx, Trace::empty()).await
}

/// One MH step from `state` (seed 000 Alg. 1 lines 3-6): draw a cut, regenerate with GCD,
/// accept with min(1, P(w')q(w|w') / (P(w)q(w'|w))). An invalid proposal (dead end, or
/// `max_tokens` reached) is rejected; from an invalid state any valid proposal is taken.
/// Emits [`Event::McmcProposal`]; returns whether the proposal was accepted.
pub async fn step<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    kernel: Kernel,
    state: &mut Trace<C::State>,
    chain: usize,
    step: usize,
) -> Result<bool, SampleError> {
    let accepted = steps(ctx, kernel, std::slice::from_mut(state), chain, step).await?;
    Ok(accepted[0])
}

/// [`step`] for chains `first ..` of one batch at once: their cuts drawn in chain order,
/// their regenerations in lockstep ([`trace::extend_many`]: one batched model call a
/// token), then each accepted or rejected in chain order. Each chain's transition is
/// [`step`]'s, so the chains stay independent and exact; only the order of the random
/// draws differs from running them one after another.
async fn steps<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    kernel: Kernel,
    states: &mut [Trace<C::State>],
    first: usize,
    step: usize,
) -> Result<Vec<bool>, SampleError> {
    let cuts: Vec<usize> = states
        .iter()
        .map(|s| {
            let pos = cut_distribution(kernel.truncation, s);
            ctx.rng().categorical(&pos).min(s.len())
        })
        .collect();
    let truncated = states.iter().zip(&cuts).map(|(s, &c)| s.truncate(c));
    let proposals = trace::extend_many(ctx, truncated.collect()).await?;
    let mut accepted = Vec::with_capacity(states.len());
    for (i, ((state, proposal), cut)) in states.iter_mut().zip(proposals).zip(cuts).enumerate() {
        let proposal = match proposal {
            Ok(p) => Some(p),
            Err(SampleError::DeadEnd { .. }) => None,
            Err(e) => return Err(e),
        };
        accepted.push(decide(ctx, kernel, state, proposal, cut, first + i, step));
    }
    Ok(accepted)
}

/// Accepts or rejects `proposal` (`None`: a dead end) as the chain's next state (Alg. 1
/// lines 5-6) and emits [`Event::McmcProposal`]; whether it was accepted.
fn decide<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    kernel: Kernel,
    state: &mut Trace<C::State>,
    proposal: Option<Trace<C::State>>,
    cut: usize,
    chain: usize,
    step: usize,
) -> bool {
    let log_ratio = match &proposal {
        Some(p) if p.valid && state.valid => {
            p.total_logp() + kernel.log_q(p, state, cut)
                - state.total_logp()
                - kernel.log_q(state, p, cut)
        }
        Some(p) if p.valid => f64::INFINITY,
        _ => f64::NEG_INFINITY,
    };
    let accept_prob = if log_ratio.is_nan() {
        0.0
    } else {
        log_ratio.min(0.0).exp()
    };
    let accepted = accept_prob > 0.0 && ctx.rng().bernoulli(accept_prob);
    let suffix = proposal
        .as_ref()
        .map(|p| p.tokens[cut..].to_vec())
        .unwrap_or_default();
    ctx.emit(Event::McmcProposal {
        chain,
        step,
        cut,
        suffix,
        log_ratio,
        accept_prob,
        accepted,
    });
    if accepted && let Some(p) = proposal {
        *state = p;
    }
    accepted
}

/// `mcmc-*`: `n` independent chains, each printed after `steps` GCD generations
/// (the initial sample and `steps − 1` proposals). With `batch` B > 1, B chains run side
/// by side, their generations in lockstep through the batched forward pass.
pub async fn run<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    truncation: Truncation,
) -> Result<(), SampleError> {
    let kernel = Kernel::new(truncation);
    let (n, batch) = (ctx.params().n, ctx.params().batch.max(1));
    for first in (0..n).step_by(batch) {
        let chains = first..(first + batch).min(n);
        let empty = chains.clone().map(|_| Trace::empty()).collect();
        let mut states = Vec::with_capacity(chains.len());
        for (chain, state) in chains.clone().zip(trace::extend_many(ctx, empty).await?) {
            let state = state?;
            if !state.valid {
                ctx.emit(Event::Note {
                    message: format!(
                        "chain {chain}: the first sample reached max tokens ({}) without EOS; \
                         the chain starts outside the target and takes the first valid proposal",
                        ctx.params().max_tokens
                    ),
                });
            }
            states.push(state);
        }
        for k in 1..ctx.params().steps {
            ctx.check_cancelled()?;
            steps(ctx, kernel, &mut states, first, k).await?;
        }
        for (chain, state) in chains.zip(states) {
            // A chain that never reached the target has no sample of it to give.
            if !state.valid {
                return Err(SampleError::ChainOutsideCut {
                    chain,
                    max_tokens: ctx.params().max_tokens,
                    steps: ctx.params().steps,
                });
            }
            let logp = state.total_logp();
            ctx.finish(state.tokens, logp, state.valid, None, Some(chain))?;
        }
    }
    Ok(())
}
