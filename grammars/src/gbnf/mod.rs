//! GBNF (llama.cpp's grammar format) translated to llguidance's Lark by our own parser.

pub mod ast;
pub mod check;
pub mod lark;
pub mod parser;
pub mod prune;

use crate::error::GrammarError;

/// Parses and checks GBNF `source` and returns equivalent Lark text (start rule `start`).
pub fn to_lark(source: &str) -> Result<String, GrammarError> {
    let grammar = parser::parse(source)?;
    check::check(&grammar)?;
    Ok(lark::to_lark(&prune::prune(&grammar)))
}
