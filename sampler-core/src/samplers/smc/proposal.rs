//! Properly weighted token proposals for SMC: each extends one particle by a token and
//! returns the incremental weight ψ(x'|x)/q(x'|x) (or an unbiased estimate of it).

use crate::exp::exp64;
use crate::hmm::{Guide, Proposal};
use crate::samplers::awrs::{WRS_MAX_REJECTIONS, awrs, wrs};
use crate::samplers::{Ctx, Method};
use crate::{Constraint, LanguageModel, SampleError, TokenId};

/// The token proposal an SMC run extends its particles with.
#[derive(Clone, Copy, Debug)]
pub enum TokenProposal<'g> {
    /// Adaptive weighted rejection sampling (seed 003 Def. 2), weight Ẑ.
    Awrs,
    /// Weighted rejection sampling with L = 1 (seed 003 Def. 1), weight Ẑ.
    Wrs,
    /// Token masking, weight Z = the allowed mass.
    Mask,
    /// The budget-aware mask (seed 001; regular constraints), weight its mass.
    BudgetMask,
    /// The LM itself, weight 1[token allowed] (the constraint as a 0/1 twist).
    Twisted,
    /// P-GCD (seed 001): q(v) ∝ P_LM(v)·g(v) over the budget mask, g the HMM × automaton
    /// satisfiability probability; weight P_LM(v)/q(v) (regular constraints only; each
    /// particle carries its HMM belief).
    PGcd(&'g Guide),
}

impl TokenProposal<'_> {
    /// `smc-gcd`'s proposal: the budget-aware mask on a regular constraint (no particle
    /// dies at the budget), plain token masking otherwise.
    pub fn masking(regular: bool) -> Self {
        if regular {
            TokenProposal::BudgetMask
        } else {
            TokenProposal::Mask
        }
    }

    /// The SMC sampler that extends particles with this proposal.
    pub fn method(&self) -> Method {
        match self {
            TokenProposal::Awrs => Method::AwrsSmc,
            TokenProposal::Wrs => Method::WrsSmc,
            TokenProposal::Mask | TokenProposal::BudgetMask => Method::SmcGcd,
            TokenProposal::Twisted => Method::TwistedSmc,
            TokenProposal::PGcd(_) => Method::PGcdSmc,
        }
    }

    /// How a particle dies under this proposal, in words (for the message when all did).
    pub fn how_particles_die(&self, max_tokens: usize) -> String {
        match self {
            TokenProposal::Awrs | TokenProposal::Mask => {
                format!("cut off at the {max_tokens}-token limit, or left with no allowed token")
            }
            TokenProposal::Wrs => format!(
                "cut off at the {max_tokens}-token limit, or left with no allowed token found \
                 within WRS's rejections"
            ),
            TokenProposal::Twisted => format!(
                "the model drew a token the constraint refuses, or cut off at the \
                 {max_tokens}-token limit"
            ),
            TokenProposal::BudgetMask | TokenProposal::PGcd(_) => format!(
                "left with no allowed token that can still end within the {max_tokens}-token \
                 limit"
            ),
        }
    }
}

impl PartialEq for TokenProposal<'_> {
    /// Same variant, and for `PGcd` the very same guide.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (TokenProposal::PGcd(a), TokenProposal::PGcd(b)) => std::ptr::eq(*a, *b),
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

impl Eq for TokenProposal<'_> {}

/// One extension: the token (`None` when nothing is allowed) and the weight.
#[derive(Clone, Debug, PartialEq)]
pub struct Extension {
    /// The token drawn; `None` when the particle died.
    pub token: Option<TokenId>,
    /// The incremental weight (0 for a dead particle).
    pub weight: f64,
    /// The allowed mass Z when the proposal knows it exactly and it differs from the
    /// weight (P-GCD), for the `Token` event.
    pub mask_mass: Option<f64>,
    /// What P-GCD's guide did at this step (the `GuideStep` event's numbers).
    pub guide: Option<GuideInfo>,
}

/// P-GCD's proposal at one step, as [`crate::Event::GuideStep`] reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct GuideInfo {
    /// Σ P(v)·g̃(v) / Z over the allowed tokens.
    pub guide_mass: f64,
    /// The most likely tokens under q: (token, P(v), q(v)).
    pub top: Vec<(TokenId, f64, f64)>,
}

impl Extension {
    /// A token (or none) and its weight, with nothing else to report.
    fn plain(token: Option<TokenId>, weight: f64) -> Self {
        Extension {
            token,
            weight,
            mask_mass: None,
            guide: None,
        }
    }
}

/// What a proposal computes from a particle's next-token distribution before it draws: it
/// depends only on the particle's tokens, so particles that resampling copied (the same
/// tokens, hence the same state, belief and distribution) share one at a step.
#[derive(Clone, Debug)]
pub enum Prepared<'g> {
    /// AWRS's: the LM's probabilities.
    Awrs(Vec<f64>),
    /// WRS's: the LM's probabilities.
    Wrs(Vec<f64>),
    /// The twist's: the LM's probabilities.
    Twisted(Vec<f64>),
    /// Masking's (plain or budget-aware): the masked probabilities and their sum Z.
    Masked {
        /// P(v) on allowed tokens, 0 elsewhere.
        weights: Vec<f64>,
        /// Σ weights.
        z: f64,
    },
    /// P-GCD's: its guide, and its proposal with the `GuideStep` event's top tokens (`None`
    /// when the automaton has no state for the prefix: the particle dies).
    Guided(&'g Guide, Option<Guided>),
}

/// P-GCD's proposal after one prefix and the `GuideStep` event's top tokens.
#[derive(Clone, Debug)]
pub struct Guided {
    /// q over the vocabulary, its total and the mask's mass.
    pub q: Proposal,
    /// The most likely tokens under q: (token, P(v), q(v)).
    pub top: Vec<(TokenId, f64, f64)>,
}

/// Prepares the draw of a particle whose constraint state is `state`, at `position`, given
/// the model's next-token log-probabilities `lp`; `belief` is the particle's HMM belief
/// (read by [`TokenProposal::PGcd`] only; empty otherwise). Draws nothing.
pub fn prepare<'g, L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    proposal: TokenProposal<'g>,
    lp: &[f64],
    state: &C::State,
    belief: &[f64],
    position: usize,
) -> Result<Prepared<'g>, SampleError> {
    let probs = || -> Vec<f64> { lp.iter().map(|&l| exp64(l)).collect() };
    Ok(match proposal {
        TokenProposal::Awrs => Prepared::Awrs(probs()),
        TokenProposal::Wrs => Prepared::Wrs(probs()),
        TokenProposal::Twisted => Prepared::Twisted(probs()),
        TokenProposal::Mask | TokenProposal::BudgetMask => {
            let mask = if proposal == TokenProposal::Mask {
                ctx.mask(state)
            } else {
                ctx.budget_mask(state, ctx.params().max_tokens.saturating_sub(position))?
            };
            // exp only where the mask allows: most of the vocabulary is masked out.
            let weights: Vec<f64> = (0..lp.len())
                .map(|t| {
                    if mask.contains(t as TokenId) {
                        exp64(lp[t])
                    } else {
                        0.0
                    }
                })
                .collect();
            let z = weights.iter().sum();
            Prepared::Masked { weights, z }
        }
        TokenProposal::PGcd(guide) => {
            let remaining = ctx.params().max_tokens.saturating_sub(position);
            // The guide reads the budget mask off the automaton: counted like a mask.
            let Some(s) = ctx.tensor_state(state) else {
                return Ok(Prepared::Guided(guide, None));
            };
            let probs = probs();
            let q = guide.proposal(&probs, belief, s, remaining);
            let k = ctx.params().top_k_events;
            let top = crate::samplers::util::top_k(&q.weights, k)
                .into_iter()
                .filter(|&v| q.weights[v as usize] > 0.0)
                .map(|v| (v, probs[v as usize], q.weights[v as usize] / q.total))
                .collect();
            Prepared::Guided(guide, Some(Guided { q, top }))
        }
    })
}

/// Draws one particle's next token from what [`prepare`] computed for it (or for a copy of
/// it) and returns the extension with its weight.
pub fn draw<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    prepared: &Prepared<'_>,
    state: &C::State,
) -> Extension {
    match prepared {
        Prepared::Awrs(probs) => {
            let (rng, mut allowed) = ctx.rng_and_check(state);
            let d = awrs(probs, rng, &mut allowed);
            Extension::plain(d.token, d.z_hat)
        }
        Prepared::Wrs(probs) => {
            let (rng, mut allowed) = ctx.rng_and_check(state);
            let d = wrs(probs, 1, WRS_MAX_REJECTIONS, rng, &mut allowed);
            Extension::plain(d.token, d.z_hat)
        }
        Prepared::Twisted(probs) => {
            let t = ctx.rng().categorical(probs) as TokenId;
            let ok = ctx.allows(state, t);
            Extension::plain(Some(t), if ok { 1.0 } else { 0.0 })
        }
        Prepared::Masked { weights, z } => {
            let token = (*z > 0.0).then(|| ctx.rng().categorical(weights) as TokenId);
            Extension::plain(token, *z)
        }
        Prepared::Guided(guide, Some(Guided { q, top })) if q.total > 0.0 => {
            let t = ctx.rng().categorical(&q.weights) as TokenId;
            Extension {
                token: Some(t),
                weight: guide.weight(q, t),
                mask_mass: Some(q.mask_mass),
                guide: Some(GuideInfo {
                    guide_mass: if q.mask_mass > 0.0 {
                        q.total / q.mask_mass
                    } else {
                        0.0
                    },
                    top: top.clone(),
                }),
            }
        }
        // No allowed token with model probability (or no automaton state): it dies.
        Prepared::Guided(_, _) => Extension::plain(None, 0.0),
    }
}
