//! Analytic language models and small constraints: exact, instant test doubles.
//!
//! The samplers' exactness tests run against these in milliseconds, and the page's toy
//! mode uses them so the bias of token masking can be shown with no model download.
//!
//! # Key types
//! - [`FnLm`]: a language model given by a function from prefix to probabilities.
//! - [`gsk_lm`] and [`gsk_constraint`]: the skewed grammar G_sk of the ASAp paper (seed 004,
//!   Fig. 1 and Ex. 2-3) with an LM of that shape.
//! - [`RandomLm`]: a seeded random n-gram model over a tiny vocabulary.
//! - [`ToyModel`]: the toy models by name (`toy:gsk`, `toy:random:SEED`,
//!   `toy:letters:N:SEED`), one registry for the command line and the page.
//! - [`FiniteLanguage`]: a constraint that is an explicit finite set of byte strings.

#[cfg(test)]
mod failing;
mod finite;
mod fn_lm;
mod gsk;
mod random_lm;
mod registry;

#[cfg(test)]
pub(crate) use failing::Failing;
pub use finite::FiniteLanguage;
pub use fn_lm::FnLm;
pub use gsk::{GskLm, gsk_constraint, gsk_lm, gsk_vocabulary};
pub use random_lm::RandomLm;
pub use registry::{LETTERS, RANDOM_ORDER, ToyLm, ToyModel};
