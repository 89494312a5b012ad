//! Turns llguidance's error messages into [`GrammarError`]s with a kind and a position.

use crate::error::{ErrorKind, GrammarError, Location};
use crate::format::Format;

/// Classifies an llguidance compile error for `source` in `format`.
pub fn classify(message: &str, format: Format, source: &str) -> GrammarError {
    let first = message.lines().next().unwrap_or(message).trim();
    let kind = if first.contains("Unimplemented keys") || first.contains("not supported") {
        ErrorKind::Unsupported
    } else if first.contains("too big") || first.contains("too large") {
        ErrorKind::TooLarge
    } else if first.contains("nknown rule") || first.contains("undefined") {
        ErrorKind::UndefinedRule
    } else if format == Format::Lark || format == Format::Regex {
        ErrorKind::Syntax
    } else {
        ErrorKind::Engine
    };
    let mut err = GrammarError::new(kind, first.to_string());
    if format == Format::Lark {
        err.location = lark_location(message, source);
    }
    err
}

/// Finds `line N` (and `column M`, if given) in an llguidance Lark error.
fn lark_location(message: &str, source: &str) -> Option<Location> {
    let line = number_after(message, "line ")?;
    let column = number_after(message, "column ").unwrap_or(1);
    (line >= 1 && line <= source.lines().count().max(1)).then_some(Location { line, column })
}

fn number_after(s: &str, key: &str) -> Option<usize> {
    let i = s.find(key)? + key.len();
    let digits: String = s[i..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}
