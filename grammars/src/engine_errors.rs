//! Turns llguidance's error messages into [`GrammarError`]s with a kind and a position.

use crate::error::{ErrorKind, GrammarError, Location};
use crate::format::Format;

/// Classifies an llguidance compile error for `source` in `format`.
pub fn classify(message: &str, format: Format, source: &str) -> GrammarError {
    let first = message.lines().next().unwrap_or(message).trim();
    // llguidance asserts (a caught panic) that a grammar has fewer than 2^16 symbols.
    if first.contains("symbols.len() < u16::MAX") {
        return GrammarError::new(
            ErrorKind::TooLarge,
            "the grammar needs more than 65 525 symbols, llguidance's limit; simplify it \
             or split it",
        );
    }
    let kind = if first.contains("Unimplemented keys") || first.contains("not supported") {
        ErrorKind::Unsupported
    } else if first.contains("too big") || first.contains("too large") {
        ErrorKind::TooLarge
    } else if first.contains("nknown format") {
        ErrorKind::Unsupported
    } else if first.contains("unknown name") || first.contains("undefined") {
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
    if format == Format::JsonSchema
        && let Some(list) = first.split_once("Unimplemented keys: ").map(|(_, l)| l)
        && let Ok(keys) = serde_json::from_str::<Vec<String>>(list)
    {
        err.location = crate::json_keywords::keyword_location(source, &keys);
    }
    err
}

/// Finds llguidance's `LINE(COLUMN)` position in a Lark error, e.g. `at 2(5): …`.
fn lark_location(message: &str, source: &str) -> Option<Location> {
    let first = message.lines().next()?;
    let bytes = first.as_bytes();
    for (i, _) in first.match_indices('(') {
        let line_start = bytes[..i]
            .iter()
            .rposition(|b| !b.is_ascii_digit())
            .map_or(0, |p| p + 1);
        let close = first[i + 1..].find(')')? + i + 1;
        let (Ok(line), Ok(column)) = (
            first[line_start..i].parse::<usize>(),
            first[i + 1..close].parse::<usize>(),
        ) else {
            continue;
        };
        if line >= 1 && line <= source.lines().count().max(1) {
            return Some(Location { line, column });
        }
    }
    None
}
