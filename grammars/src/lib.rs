//! Context-free grammar and JSON Schema constraints for Strait, run by llguidance.
//!
//! # Key types
//! - [`Compiler`]: compiles grammar text for one vocabulary; [`compile`] does it in one call.
//! - [`CfgConstraint`]: the compiled grammar behind sampler-core's [`sampler_core::Constraint`].
//! - [`Format`]: Lark, GBNF, JSON Schema or regex, by extension or detected from the text.
//! - [`ConstraintBuilder`] and [`constraint_from_text`]: a constraint from text of any
//!   format, regexes included (what the command line and the page both call).
//! - [`GrammarError`]: what went wrong, with file, line and column where known.
//!
//! # Usage
//! ```
//! use grammars::{Compiler, Format};
//! use sampler_core::{Constraint, Vocabulary};
//!
//! // Tokens: the bytes "a", "b", "ab", then EOS.
//! let vocab = Vocabulary::new(vec![b"a".to_vec(), b"b".to_vec(), b"ab".to_vec(), b"</s>".to_vec()], 3, &[]);
//! let compiler = Compiler::new(&vocab)?; // once per vocabulary
//! let c = compiler.compile("root ::= \"a\" \"b\"+\n", None)?; // detected as GBNF
//! let s = c.advance(&c.initial(), 2).expect("`ab` is allowed");
//! assert!(c.is_complete(&s) && c.mask(&s).contains(1) && c.mask(&s).contains(3));
//! assert_eq!(Format::from_path("g.lark"), Some(Format::Lark));
//! # Ok::<(), grammars::GrammarError>(())
//! ```
//!
//! # Front-ends
//! Lark goes to llguidance as written (its lexer is greedy, as llguidance documents). GBNF
//! is parsed and checked by [`gbnf`] and translated to Lark with one-character terminals,
//! which keeps GBNF's character-level meaning exactly. JSON Schema uses llguidance's
//! compiler, which rejects keywords it does not implement by name. Left recursion is
//! supported (llguidance parses with Earley).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod compile;
pub mod constraint;
mod engine_errors;
pub mod error;
pub mod format;
pub mod from_text;
pub mod gbnf;
mod json_keywords;
mod json_locate;
pub mod limits;
mod tok_env;

pub use compile::{Compiler, compile};
pub use constraint::{CfgConstraint, CfgState};
pub use error::{ErrorKind, GrammarError, Location};
pub use format::Format;
pub use from_text::{ConstraintBuilder, TextError, constraint_from_text};
pub use limits::Limits;
