//! Sequential Monte Carlo with properly weighted token proposals (seed 003 App. A Alg. 2).
//!
//! M particles grow one token per step; each extension multiplies the particle's weight by
//! the proposal's weight; finished particles wait for the rest; when the effective sample
//! size falls below τ·M the particles are resampled. A run outputs its M final particles
//! with normalized weights and emits the log evidence estimate log Ĝ (an unbiased Ĝ of
//! P(constraint satisfied within `max_tokens`)).
//!
//! # Key types
//! - [`TokenProposal`]: AWRS, WRS, token masking, budget mask, the LM with a 0/1 twist, or
//!   P-GCD's HMM-guided proposal (each particle then carries its HMM belief).
//! - [`run_once`]: one SMC run; [`run`]: `--n` independent runs.

mod proposal;
mod resample;

pub use proposal::{Extension, GuideInfo, Guided, Prepared, TokenProposal, draw, prepare};
pub use resample::{ancestors, ess, normalized};

use super::Ctx;
use super::cut::within;
use crate::event::TopTokens;
use crate::math::logsumexp;
use crate::{Constraint, Event, LanguageModel, SampleError, TokenId};

/// One particle: its tokens, constraint state and log weight.
#[derive(Clone, Debug)]
struct Particle<S> {
    tokens: Vec<TokenId>,
    state: S,
    logp: f64,
    log_w: f64,
    active: bool,
    valid: bool,
    /// The HMM belief over the next token's hidden state (P-GCD only; empty otherwise).
    belief: Vec<f64>,
}

/// The result of one SMC run.
#[derive(Clone, Debug, PartialEq)]
pub struct SmcResult {
    /// The final particles' tokens.
    pub tokens: Vec<Vec<TokenId>>,
    /// Their normalized weights (all 0 when every particle died).
    pub weights: Vec<f64>,
    /// log Ĝ, the log of the mean final weight (−∞ when every particle died).
    pub log_evidence: f64,
}

/// Extends every active particle by one token (one batched LM call). Particles with the
/// same tokens (resampling's copies) share their step's preparation (the probabilities,
/// the mask, the event's top tokens): it is computed once for the first of them, and each
/// draws its own token from it, in particle order as before.
async fn extend_all<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    proposal: TokenProposal<'_>,
    ps: &mut [Particle<C::State>],
) -> Result<Vec<Option<TokenId>>, SampleError> {
    let eos = ctx.eos();
    let active: Vec<usize> = (0..ps.len()).filter(|&m| ps[m].active).collect();
    let prefixes: Vec<&[TokenId]> = active.iter().map(|&m| &ps[m].tokens[..]).collect();
    let lps = ctx.logprobs_batch(&prefixes).await?;
    let group = groups(&prefixes);
    // Each group's preparation and its `Token` event's top tokens.
    let mut shared: Vec<(Prepared<'_>, TopTokens)> = Vec::new();
    let mut drawn = vec![None; ps.len()];
    for ((&m, lp), &g) in active.iter().zip(&lps).zip(&group) {
        let p = &mut ps[m];
        if g == shared.len() {
            let prepared = prepare(ctx, proposal, lp, &p.state, &p.belief, p.tokens.len())?;
            shared.push((prepared, ctx.token_top(lp, None)));
        }
        let (prepared, top) = &shared[g];
        let ext = draw(ctx, prepared, &p.state);
        drawn[m] = ext.token;
        let Some(t) = ext.token.filter(|_| ext.weight > 0.0) else {
            // Dead: no allowed token (or the twist rejected the LM's token).
            if let Some(t) = ext.token {
                p.logp += lp[t as usize];
                p.tokens.push(t);
            }
            (p.active, p.valid, p.log_w) = (false, false, f64::NEG_INFINITY);
            continue;
        };
        let position = p.tokens.len();
        ctx.emit_token_with_top(
            m,
            position,
            t,
            lp[t as usize],
            Some(ext.mask_mass.unwrap_or(ext.weight)),
            top.clone(),
        );
        if let Some(info) = ext.guide {
            ctx.emit(Event::GuideStep {
                particle: m,
                position,
                token: t,
                mask_mass: ext.mask_mass.unwrap_or(0.0),
                guide_mass: info.guide_mass,
                weight: ext.weight,
                top: info.top,
            });
        }
        p.log_w += ext.weight.ln();
        p.logp += lp[t as usize];
        p.tokens.push(t);
        if t == eos {
            (p.active, p.valid) = (false, true);
        } else if let Some(s) = ctx.advance(&p.state, t) {
            p.state = s;
            if let TokenProposal::PGcd(guide) = proposal {
                p.belief = guide.advance_belief(&p.belief, t);
            }
            if !within(p.tokens.len() + 1, ctx.params().max_tokens) {
                // Incomplete at the budget: the final target gives it no mass.
                (p.active, p.log_w) = (false, f64::NEG_INFINITY);
            }
        } else {
            return Err(SampleError::Unsupported(
                "the constraint refused a token it allowed".into(),
            ));
        }
    }
    Ok(drawn)
}

/// Which distinct token sequence each prefix is, numbered in order of first appearance, so
/// a group's preparation exists by the time its later members draw.
fn groups(prefixes: &[&[TokenId]]) -> Vec<usize> {
    #[cfg(test)]
    if tests::UNSHARED.with(std::cell::Cell::get) {
        return (0..prefixes.len()).collect();
    }
    super::util::first_appearance(prefixes)
}

/// One SMC run of `particles` particles; emits its events and returns the ensemble.
pub async fn run_once<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    proposal: TokenProposal<'_>,
    run: usize,
) -> Result<SmcResult, SampleError> {
    let m = ctx.params().particles;
    ctx.count_generations(m);
    let start = Particle {
        tokens: Vec::new(),
        state: ctx.initial(),
        logp: 0.0,
        log_w: 0.0,
        active: true,
        valid: false,
        belief: match proposal {
            TokenProposal::PGcd(guide) => guide.initial_belief(),
            _ => Vec::new(),
        },
    };
    let mut ps = vec![start; m];
    let mut step = 0;
    while ps.iter().any(|p| p.active) {
        let drawn = extend_all(ctx, proposal, &mut ps).await?;
        let log_w: Vec<f64> = ps.iter().map(|p| p.log_w).collect();
        let e = ess(&log_w);
        ctx.emit(Event::ParticlesExtended {
            run,
            step,
            tokens: drawn,
            log_weights: log_w.clone(),
            ess: e,
        });
        if e == 0.0 {
            break; // every particle died
        }
        if e < ctx.params().ess_threshold * m as f64 {
            let anc = ancestors(ctx.params().resampling, &log_w, ctx.rng());
            let mean = logsumexp(log_w.iter().copied()) - (m as f64).ln();
            ps = anc.iter().map(|&a| ps[a].clone()).collect();
            ps.iter_mut().for_each(|p| p.log_w = mean);
            ctx.emit(Event::Resampled {
                run,
                step,
                ancestors: anc,
                ess: e,
            });
        }
        step += 1;
    }
    let log_w: Vec<f64> = ps.iter().map(|p| p.log_w).collect();
    let log_evidence = logsumexp(log_w.iter().copied()) - (m as f64).ln();
    ctx.emit(Event::Evidence { run, log_evidence });
    let weights = normalized(&log_w);
    for (p, &w) in ps.iter().zip(&weights) {
        ctx.finish(p.tokens.clone(), p.logp, p.valid, Some(w), Some(run))?;
    }
    Ok(SmcResult {
        tokens: ps.into_iter().map(|p| p.tokens).collect(),
        weights,
        log_evidence,
    })
}

/// `--n` independent SMC runs, each printing its M weighted particles; when every particle
/// of a run died, says so in plain words at the end (an [`Event::Estimate`]).
pub async fn run<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    proposal: TokenProposal<'_>,
) -> Result<(), SampleError> {
    let mut dead = 0;
    for r in 0..ctx.params().n {
        let result = run_once(ctx, proposal, r).await?;
        dead += usize::from(result.log_evidence == f64::NEG_INFINITY);
    }
    if dead > 0 {
        let event = every_particle_died(proposal, dead, ctx.params());
        ctx.emit(event);
    }
    Ok(())
}

/// Why `dead` of the runs' samples all weigh 0 (their evidence is 0), as an
/// [`Event::Estimate`] that the front ends show: otherwise the user would see only
/// invalid samples.
fn every_particle_died(
    proposal: TokenProposal<'_>,
    dead: usize,
    params: &crate::samplers::Params,
) -> Event {
    let method = proposal.method().name();
    let (which, whose) = if params.n == 1 {
        ("every particle".to_string(), "the samples")
    } else {
        (
            format!("in {dead} of the {} runs every particle", params.n),
            "those runs' samples",
        )
    };
    // With the budget-aware mask no particle is cut off: more particles would die alike.
    let more = match proposal {
        TokenProposal::BudgetMask | TokenProposal::PGcd(_) => "more max tokens",
        _ => "more max tokens or more particles",
    };
    Event::Estimate {
        log_mass: f64::NEG_INFINITY,
        method: method.into(),
        chosen: true,
        message: format!(
            "{method}: {which} ended without a valid output ({}), so {whose} all weigh 0: \
             valid outputs of this length hold too little of the model's mass (or none) for \
             {} particles to find one; {more} may find one",
            proposal.how_particles_die(params.max_tokens),
            params.particles
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samplers::{Ctx, Params, Sample};
    use crate::toy::{FiniteLanguage, RandomLm};
    use crate::{SeededRng, VecSink, Vocabulary, block_on};
    use std::cell::Cell;

    thread_local! {
        /// Set: every particle prepares its own step, as before copies shared theirs.
        pub(super) static UNSHARED: Cell<bool> = const { Cell::new(false) };
    }

    /// One run's ensemble, its events, and the constraint checks it made.
    fn run(proposal: TokenProposal<'_>, seed: u64, unshared: bool) -> (SmcResult, Vec<Event>, u64) {
        let w = |ws: &[&str]| ws.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
        let vocab = Vocabulary::new(w(&["a", "b", "ab", ""]), 3, &[3]);
        let c = FiniteLanguage::new(vocab, w(&["ab", "b", "abb", "ba", "aab", "abab"]));
        let mut lm = RandomLm::new(4, 3, 2, 11);
        // Resampling at every step makes copies at every step.
        let p = Params {
            particles: 6,
            max_tokens: 6,
            ess_threshold: 1.0,
            ..Params::default()
        };
        let (mut rng, mut sink, mut out) =
            (SeededRng::new(seed), VecSink::default(), |_: &Sample| {});
        UNSHARED.with(|u| u.set(unshared));
        let mut ctx = Ctx::new(&mut lm, &c, &mut rng, &mut sink, &p, None, &mut out);
        let r = block_on(run_once(&mut ctx, proposal, 0)).unwrap();
        let checks = ctx.counters().constraint_checks;
        UNSHARED.with(|u| u.set(false));
        (r, sink.0, checks)
    }

    /// Sharing a step among copies changes no random number: the same ensemble, weights,
    /// evidence and events, seed by seed, as each particle preparing its own step, for
    /// every proposal that runs on a finite language; and it does share (fewer checks
    /// where a proposal computes masks).
    #[test]
    fn copies_sharing_a_step_draw_what_they_drew_alone() {
        for proposal in [
            TokenProposal::Awrs,
            TokenProposal::Wrs,
            TokenProposal::Mask,
            TokenProposal::Twisted,
        ] {
            let mut fewer = 0;
            for seed in 0..30 {
                let (shared, shared_events, shared_checks) = run(proposal, seed, false);
                let (alone, alone_events, alone_checks) = run(proposal, seed, true);
                assert_eq!(shared, alone, "{proposal:?} seed {seed}");
                assert_eq!(shared_events, alone_events, "{proposal:?} seed {seed}");
                assert!(shared_checks <= alone_checks);
                fewer += usize::from(shared_checks < alone_checks);
            }
            if proposal == TokenProposal::Mask {
                assert!(fewer > 0, "no step was shared");
            }
        }
    }
}
