//! Context-free grammar and JSON Schema constraints for Strait, run by llguidance.
//!
//! # Key types
//! - [`Compiler`]: compiles grammar text for one vocabulary; [`compile`] does it in one call.
//! - [`CfgConstraint`]: the compiled grammar behind sampler-core's [`sampler_core::Constraint`].
//! - [`Format`]: Lark, GBNF, JSON Schema or regex, by extension or detected from the text.
//! - [`GrammarError`]: what went wrong, with file, line and column where known.
//!
//! # Front-ends
//! Lark goes to llguidance as written (its lexer is greedy, as llguidance documents). GBNF
//! is parsed and checked by [`gbnf`] and translated to Lark with one-character terminals,
//! which keeps GBNF's character-level meaning exactly. JSON Schema uses llguidance's
//! compiler, which rejects keywords it does not implement by name. Left recursion is
//! supported (llguidance parses with Earley).
#![deny(missing_docs)]

pub mod compile;
pub mod constraint;
mod engine_errors;
pub mod error;
pub mod format;
pub mod gbnf;
mod json_keywords;
pub mod limits;
mod tok_env;

pub use compile::{Compiler, compile};
pub use constraint::{CfgConstraint, CfgState};
pub use error::{ErrorKind, GrammarError, Location};
pub use format::Format;
pub use limits::Limits;
