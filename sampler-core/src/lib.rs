//! Constraints, automata, samplers and metrics for faithful constrained sampling.
//!
//! Pure Rust with no GPU and no web dependencies: it builds for native targets and for
//! `wasm32-unknown-unknown` with no feature flags.
//!
//! # Key types
//! - [`LanguageModel`]: next-token log-probabilities over a vocabulary (async, so that a
//!   WebGPU read-back can be awaited).
//! - [`Constraint`]: an incremental token-level constraint (per-token check, full mask,
//!   completeness and, for regular constraints, a [`Regular`] view with budget-aware masks).
//! - [`DynLm`] and [`DynConstraint`]: one type for any model and any constraint, which
//!   the front ends (CLI, playground, page) hold instead of writing their own "any" types.
//! - [`Vocabulary`]: the byte string of every token, which lifts byte-level automata to tokens.
//! - [`Event`] and [`EventSink`]: what a sampler reports while it runs.
//! - [`RandomSource`]: injected randomness, so tests can enumerate every random path.
//! - [`RegexConstraint`]: a regex as a byte DFA ([`RegexAutomaton`]) lifted to tokens through
//!   a [`TokenTrie`], tensorized ([`TensorizedAutomaton`]) for budget-aware masks.
//! - [`samplers::Sampler`] with [`samplers::Method`]: every sampler of the five papers.
//! - [`exact::enumerate`]: exact P^L of a finite language, and the statistics the tests use.
//! - [`hmm`]: P-GCD's HMM distilled from the model and its product with the tensorized
//!   automaton (the `p-gcd-smc` proposal, seed 001).
//! - [`toy`]: analytic language models (G_sk, seeded random n-grams) for exact tests.
//!
//! # Usage
//! Pick a sampler from [`samplers`], give it a model, a constraint, a random source and an
//! event sink, and drive its future with [`block_on()`] (native) or an executor of your own.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod block_on;
pub mod byte_automaton;
pub mod constraint;
pub mod counters;
pub mod dyn_constraint;
pub mod dyn_lm;
pub mod error;
pub mod event;
pub mod exact;
pub mod exp;
pub mod function_model;
pub mod hmm;
pub mod limits;
pub mod lm;
pub mod math;
pub mod regex;
pub mod request;
pub mod rng;
pub mod samplers;
pub mod sum_tree;
pub mod tensorized;
pub mod token_constraint;
pub mod token_set;
pub mod token_trie;
pub mod toy;
pub mod vocab;

pub use block_on::block_on;
pub use byte_automaton::ByteAutomaton;
pub use constraint::{Constraint, Regular};
pub use dyn_constraint::{DynConstraint, DynState, into_dyn};
pub use dyn_lm::{DynLanguageModel, DynLm, LmFuture};
pub use error::SampleError;
pub use event::{Event, EventSink, NullSink, VecSink};
pub use limits::{LimitExceeded, Limits};
pub use lm::{LanguageModel, LmError, check_logprobs, first_not_a_logprob};
pub use regex::{RegexAutomaton, RegexError};
pub use request::{Enumerated, Record, SampleRequest, Scored};
pub use rng::{RandomSource, SeededRng};
pub use sum_tree::SumTree;
pub use tensorized::TensorizedAutomaton;
pub use token_constraint::{RegexConstraint, TokenConstraint};
pub use token_set::TokenSet;
pub use token_trie::TokenTrie;
pub use vocab::Vocabulary;

/// A token id in the model's vocabulary.
pub type TokenId = u32;
