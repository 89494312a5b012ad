//! Turns llguidance's error messages into [`GrammarError`]s with a kind and a position.

use crate::error::{ErrorKind, GrammarError, Location};
use crate::format::Format;

/// Classifies an llguidance compile error for `source` in `format`.
pub fn classify(message: &str, format: Format, source: &str) -> GrammarError {
    let first = reason(message);
    let first = first.as_str();
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
    let mut err = GrammarError::new(kind, without_position(first).to_string());
    if format == Format::Lark {
        err.location = lark_location(message, source);
        if kind == ErrorKind::UndefinedRule
            && let Some(name) = quoted_name(first)
        {
            err.location = name_location(source, name, err.location).or(err.location);
        }
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
            // llguidance counts the column in bytes; ours count characters.
            return Some(Location::of_byte_column(source, line, column));
        }
    }
    None
}

/// The message's first line, with the reason a multi-line message gives below it: the
/// regex crate's errors end their first line with `regex parse error:` and say what is
/// wrong on an `error: …` line under a drawing of the pattern.
fn reason(message: &str) -> String {
    let mut lines = message.lines();
    let first = lines.next().unwrap_or("").trim().to_string();
    if !first.ends_with(':') {
        return first;
    }
    let details: Vec<&str> = lines
        .filter_map(|l| l.trim().strip_prefix("error: "))
        .collect();
    match details.is_empty() {
        true => first,
        false => format!("{first} {}", details.join("; ")),
    }
}

/// `message` without llguidance's own `at LINE(COLUMN): ` or `LINE(COLUMN): ` in front
/// (the error names the position itself).
fn without_position(message: &str) -> &str {
    let rest = message.strip_prefix("at ").unwrap_or(message);
    let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let n = digits(rest);
    if n == 0 || !rest[n..].starts_with('(') {
        return message;
    }
    let after = &rest[n + 1..];
    let m = digits(after);
    match after[m..].strip_prefix("): ") {
        Some(tail) if m > 0 => tail,
        _ => message,
    }
}

/// The name in `unknown name: "NAME"`.
fn quoted_name(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("unknown name: \"")?;
    rest.split_once('"').map(|(name, _)| name)
}

/// Where `name` is used as a whole identifier in the Lark `source` (not inside a string, a
/// regex or a comment, nor as an alias): the first use at or after `from` (llguidance
/// points at the start of the rule that uses it), else the first anywhere.
fn name_location(source: &str, name: &str, from: Option<Location>) -> Option<Location> {
    let uses = identifier_uses(source, name);
    let at = |&offset: &usize| Location::of_offset(source, offset);
    let after = |l: &Location| from.is_none_or(|f| (l.line, l.column) >= (f.line, f.column));
    uses.iter()
        .map(at)
        .find(after)
        .or_else(|| uses.first().map(at))
}

/// Byte offsets where `name` stands as a whole identifier in Lark `source`, skipping
/// `"…"` strings, `/…/` regexes, `//` comments and `-> alias` names.
fn identifier_uses(source: &str, name: &str) -> Vec<usize> {
    let bytes = source.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let (mut uses, mut i) = (Vec::new(), 0);
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = source[i..].find('\n').map_or(bytes.len(), |n| i + n);
            }
            quote @ (b'"' | b'/') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b if ident(b) => {
                let start = i;
                while i < bytes.len() && ident(bytes[i]) {
                    i += 1;
                }
                // After `->` a name is the alternative's alias, not a use.
                let alias = source[..start]
                    .trim_end_matches([' ', '\t'])
                    .ends_with("->");
                if &source[start..i] == name && !alias {
                    uses.push(start);
                }
            }
            _ => i += 1,
        }
    }
    uses
}
