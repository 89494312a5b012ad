//! P-GCD (seed 001): an HMM distilled from the language model, multiplied with the
//! constraint's tensorized automaton, guides an SMC proposal towards tokens after which
//! the constraint can still be satisfied within the token budget.
//!
//! # Key types
//! - [`Hmm`]: the hidden Markov model (π, A, B over the whole vocabulary), its scaled
//!   forward pass and Baum–Welch (EM) step.
//! - [`HmmConfig`]: how the HMM is distilled (`samplers::pgcd` samples sequences from the
//!   model given its prompt and fits the HMM to them), with a bounded, configurable cost.
//! - [`HmmEngine`]: where the dense work runs (the EM steps and the guide's backward
//!   table); [`CpuHmm`] is the f64 reference here, the `hmm-burn` crate runs it on burn.
//! - [`Guide`]: the HMM × automaton backward pass; for a prefix (HMM belief, automaton
//!   state, remaining budget) it gives g(v) = P_HMM(satisfied within the budget | prefix,
//!   next token v) for every allowed token, and the proposal q(v) ∝ P_LM(v)·g(v) with
//!   its properly weighted SMC weight.
//!
//! # Usage
//! `Sampler::new(Method::PGcdSmc).run(...)` distils the HMM with `Params::hmm`, builds the
//! guide over the constraint's [`crate::Constraint::tensorized`] automaton and runs SMC
//! with [`crate::samplers::smc::TokenProposal::PGcd`]:
//! ```
//! use sampler_core::hmm::{Guide, Hmm};
//! use sampler_core::{RegexConstraint, SeededRng, Vocabulary, Constraint};
//!
//! let vocab = Vocabulary::new(vec![b"a".to_vec(), b"b".to_vec(), Vec::new()], 2, &[2]);
//! let c = RegexConstraint::from_regex("(ab)+", &vocab).unwrap();
//! let hmm = Hmm::random(4, vocab.len(), &mut SeededRng::new(1));
//! let guide = Guide::new(hmm, c.tensorized().unwrap(), 8, 1e-6).unwrap();
//! let s = c.tensor_state(&c.initial()).unwrap();
//! // Only `a` can start the language; with 3 tokens left ("a", "b", EOS) it still can.
//! let allowed = guide.allowed(&guide.initial_belief(), s, 3);
//! assert_eq!(allowed.iter().map(|g| g.token).collect::<Vec<_>>(), vec![0]);
//! assert!(allowed[0].log_sat < 0.0);
//! ```

mod config;
mod engine;
mod guide;
mod model;
#[cfg(test)]
mod tests;

pub use config::{HmmConfig, MAX_HMM_BYTES, MAX_HMM_SEQUENCES};
pub use engine::{CpuHmm, HmmEngine, HmmFuture, guide_table};
pub use guide::{Guide, GuidedToken, MAX_TABLE_ENTRIES, Proposal, check_table_size};
pub use model::{EmStep, Hmm};
