//! `auto`: the faithful sampler that will finish, chosen by measuring first.
//!
//! Exact rejection (CARS) needs about 1/Z generations a sample, Z = P(valid within max
//! tokens) under the model: a handful when the model mostly writes valid text, 10^19 when
//! the constraint keeps 10^-19 of its mass. Weighted SMC finishes in about one batched
//! generation a run whatever Z is, but its samples carry weights. `auto` runs one quiet
//! pilot SMC run (the masking proposal, the run's particles and max tokens) whose evidence
//! Ĝ is an unbiased estimate of Z, then picks: CARS when 1/Ĝ ≤
//! [`EXACT_MAX_GENERATIONS`], weighted SMC otherwise, and says which and why in an
//! [`Event::Estimate`] before the chosen sampler runs.
//!
//! The pilot's particles are thrown away whatever it finds: reusing them only when Ĝ is
//! small would keep runs selected by their own evidence, which biases them. The chosen
//! sampler then runs with fresh randomness, so every sample is the chosen sampler's own,
//! exact or properly weighted; the pilot's model calls are counted in the run's costs.

use super::{Ctx, Method, smc};
use crate::{Constraint, Event, LanguageModel, SampleError};

/// CARS is chosen when the pilot says exact rejection needs at most this many generations
/// a sample (1/Ĝ); above it, weighted SMC. (`strait bench faithful` measured the choice.)
pub const EXACT_MAX_GENERATIONS: f64 = 4.0;

/// What `auto` runs and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The sampler that runs.
    pub method: Method,
    /// The plain sentence shown to the user.
    pub message: String,
}

/// The weighted SMC sampler `auto` picks, and advises, when exact rejection would not
/// finish: SMC with the masking proposal (the budget-aware mask on a regular constraint).
pub const WEIGHTED: Method = Method::SmcGcd;

/// A mass as people read it: two significant digits down to 0.01, then a power of ten.
pub fn mass_text(mass: f64) -> String {
    if mass >= 0.01 {
        format!("{mass:.2}")
    } else {
        format!("{mass:.0e}")
    }
}

/// The choice for a pilot estimate `log_mass` of log Z (−∞ when every pilot particle
/// died) from a pilot of `particles` particles.
pub fn choose(log_mass: f64, particles: usize) -> Choice {
    if log_mass == f64::NEG_INFINITY || log_mass.is_nan() {
        return Choice {
            method: WEIGHTED,
            message: format!(
                "no valid output in a pilot run of {particles} particles: valid outputs hold \
                 too little of the model's mass to measure, so weighted SMC ({})",
                WEIGHTED.name()
            ),
        };
    }
    let mass = log_mass.exp().min(1.0);
    let generations = (1.0 / mass).max(1.0);
    if generations <= EXACT_MAX_GENERATIONS {
        Choice {
            method: Method::Cars,
            message: format!(
                "valid outputs hold about {} of the model's mass: exact rejection needs about \
                 {generations:.1} generations a sample, so exact sampling (cars)",
                mass_text(mass)
            ),
        }
    } else {
        Choice {
            method: WEIGHTED,
            message: format!(
                "valid outputs hold about {} of the model's mass: exact rejection would need \
                 about {} generations a sample, so weighted SMC ({})",
                mass_text(mass),
                count_text(generations),
                WEIGHTED.name()
            ),
        }
    }
}

/// A large count as people read it: whole numbers up to 10^6, then a power of ten.
fn count_text(x: f64) -> String {
    if x < 1e6 {
        format!("{}", x.round())
    } else {
        format!("{x:.0e}")
    }
}

/// The pilot, the choice and its event, then the chosen sampler.
pub async fn run<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
) -> Result<(), SampleError> {
    let proposal = if ctx.is_regular() {
        smc::TokenProposal::BudgetMask
    } else {
        smc::TokenProposal::Mask
    };
    ctx.emit(Event::Note {
        message: "auto: a pilot SMC run estimates how much of the model's mass the \
                  constraint keeps"
            .into(),
    });
    ctx.set_quiet(true);
    let pilot = smc::run_once(ctx, proposal, 0).await;
    ctx.set_quiet(false);
    let log_mass = pilot?.log_evidence;
    let choice = choose(log_mass, ctx.params().particles);
    ctx.emit(Event::Estimate {
        log_mass,
        method: choice.method.name().into(),
        chosen: true,
        message: format!("auto: {}", choice.message),
    });
    Box::pin(super::dispatch(choice.method, ctx)).await
}
