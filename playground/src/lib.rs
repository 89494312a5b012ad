//! The playground's model, without the DOM: what the page shows and shares, computed in
//! plain Rust so that it builds for wasm32 and is tested natively.
//!
//! # Key types
//! - [`state::PlaygroundState`]: the whole setup; [`permalink`] puts it in the URL hash
//!   (`#v=1&s=<lz-string>`) and reads it back as untrusted input.
//! - [`detect::GrammarKind`] and [`detect::detect_kind`]: regex, Lark, GBNF or JSON Schema.
//! - [`constraint::build_constraint`]: grammar text to a constraint, errors with line and
//!   column for the editor.
//! - [`examples::examples`]: the example menu (every file of `assets/examples/`, and toy
//!   examples), deep-linkable by id.
//! - [`toy`]: the analytic models of toy mode (G_sk, random bigrams) and their vocabularies.
//! - [`runner::Run`]: drives any sampler over the seams, records its events for replay
//!   ([`player::Player`]: speed, step), Stop, live counters.
//! - [`views::Views`]: token, trie, MCMC, SMC and results view models, driven by events.
//! - [`exact`]: exact P^L of finite languages with caps, TV and KL.
//! - [`export`]: JSON lines of samples and events.
//! - [`lessons`]: the guided lessons through the papers, their steps and deep links.
//! - [`batch_split::assign`]: which worker of the page's pool computes each sequence of a
//!   batch.
//!
//! # Usage
//! ```
//! use playground::{constraint::build_constraint, runner::Run, state::PlaygroundState};
//! use playground::toy::{ToyLm, ToyModel};
//! use playground::views::{Labels, Views};
//!
//! let state = PlaygroundState::default(); // toy G_sk with CARS
//! let toy = state.model.toy().unwrap();
//! let vocab = toy.vocabulary();
//! let c = build_constraint(state.grammar_kind, &state.grammar, &vocab).unwrap();
//! let run = Run::from_state(&state).unwrap();
//! run.drive_ready(&mut toy.lm(), &c, Some(&vocab));
//! let mut views = Views::new(Labels::from_vocabulary(&vocab));
//! for e in run.events_from(0) {
//!     views.apply_recorded(&e);
//! }
//! assert_eq!(views.results.valid, state.n as u64);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod batch_split;
pub mod constraint;
pub mod detect;
pub mod exact;
pub mod examples;
pub mod export;
pub mod lessons;
pub mod lz;
pub mod on_call;
pub mod papers;
pub mod permalink;
pub mod player;
pub mod qr;
pub mod runner;
pub mod state;
pub mod toy;
pub mod views;
