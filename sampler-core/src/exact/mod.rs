//! Exact targets and the statistics that compare samples with them.
//!
//! # Key types
//! - [`enumerate`]: P^L over every token sequence of a finite language (non-canonical
//!   tokenizations included), by depth-first search through the constraint.
//! - [`ExactDistribution`]: the sequences with log P, P^L and the normalizer Z = P(L).
//! - [`total_variation`], [`kl_divergence`], [`chi_square`]: samples against the target.
//! - [`explore`]: runs a sampler once per random path, with [`RandomSource`](crate::RandomSource)
//!   replaying branch choices, and returns the exact distribution it induces.

mod enumerate;
mod explore;
mod gamma;
mod stats;

pub use enumerate::{
    Entry, EnumerateError, ExactDistribution, Limits, enumerate, enumerate_within,
};
pub use explore::{Exploration, explore};
pub use gamma::{ln_gamma, regularized_gamma_q};
pub use stats::{ChiSquare, chi_square, kl_divergence, total_variation};
