//! Regular expressions as byte automata and token constraints.

mod automaton;
mod compile;
mod error;
mod minimize;

pub use automaton::RegexAutomaton;
pub use error::RegexError;
