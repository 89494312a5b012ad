//! The error every front-end and the constraint report: what went wrong and where.

use std::fmt;

/// A position in a grammar source, 1-based line and column (columns count characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// Line number, starting at 1.
    pub line: usize,
    /// Column number in characters, starting at 1.
    pub column: usize,
}

impl Location {
    /// The location of byte offset `offset` in `source`.
    pub fn of_offset(source: &str, offset: usize) -> Self {
        let offset = offset.min(source.len());
        let before = &source[..floor_char_boundary(source, offset)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Location { line, column }
    }

    /// Line `line` of `source` at byte column `byte_column` (both from 1, as llguidance
    /// and serde_json count), with the column counted in characters; column 0 is 1.
    pub fn of_byte_column(source: &str, line: usize, byte_column: usize) -> Self {
        let text = source.lines().nth(line.saturating_sub(1)).unwrap_or("");
        let before = text
            .char_indices()
            .take_while(|&(i, _)| i < byte_column.saturating_sub(1))
            .count();
        Location {
            line: line.max(1),
            column: before + 1,
        }
    }

    /// The location reached from this one after the text `passed`.
    pub fn advanced_over(self, passed: &str) -> Self {
        match passed.rfind('\n') {
            Some(i) => Location {
                line: self.line + passed.matches('\n').count(),
                column: passed[i + 1..].chars().count() + 1,
            },
            None => Location {
                line: self.line,
                column: self.column + passed.chars().count(),
            },
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// What kind of problem a [`GrammarError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The grammar text does not parse.
    Syntax,
    /// A rule is used but never defined.
    UndefinedRule,
    /// The grammar defines no string at all.
    EmptyLanguage,
    /// A JSON Schema keyword or grammar feature we do not support.
    Unsupported,
    /// The grammar exceeds a size limit.
    TooLarge,
    /// The format cannot be compiled here (e.g. regexes belong to sampler-core).
    WrongFormat,
    /// llguidance failed while compiling or running the grammar.
    Engine,
    /// The grammar file could not be read.
    Io,
}

/// A grammar error: kind, message, and where in which file the input is at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrammarError {
    /// What kind of problem this is.
    pub kind: ErrorKind,
    /// Human-readable description, naming what was expected where relevant.
    pub message: String,
    /// Position in the source, when known.
    pub location: Option<Location>,
    /// File name, when the source came from a file.
    pub file: Option<String>,
}

impl GrammarError {
    /// An error with no position.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        GrammarError {
            kind,
            message: message.into(),
            location: None,
            file: None,
        }
    }
    /// An error at `location`.
    pub fn at(kind: ErrorKind, location: Location, message: impl Into<String>) -> Self {
        GrammarError {
            location: Some(location),
            ..Self::new(kind, message)
        }
    }
    /// The same error attributed to file `name`.
    pub fn in_file(mut self, name: impl Into<String>) -> Self {
        self.file = Some(name.into());
        self
    }
}

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.as_deref().unwrap_or("<grammar>");
        match self.location {
            Some(l) => write!(f, "{file}:{}:{}: {}", l.line, l.column, self.message),
            None => write!(f, "{file}: {}", self.message),
        }
    }
}

impl std::error::Error for GrammarError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_character_columns() {
        let src = "ab\nc\u{e9}d\n";
        assert_eq!(Location::of_offset(src, 0), Location { line: 1, column: 1 });
        assert_eq!(Location::of_offset(src, 3), Location { line: 2, column: 1 });
        // `é` is two bytes but one column.
        assert_eq!(Location::of_offset(src, 6), Location { line: 2, column: 3 });
        // Inside a multi-byte character: the character's own column; past the end: clamped.
        assert_eq!(Location::of_offset(src, 5), Location { line: 2, column: 2 });
        assert_eq!(
            Location::of_offset(src, 99),
            Location { line: 3, column: 1 }
        );
    }

    #[test]
    fn advancing_over_text_agrees_with_counting_from_the_start() {
        let src = "ab\nc\u{e9}d\n\nxyz";
        let offsets: Vec<usize> = (0..=src.len())
            .filter(|&i| src.is_char_boundary(i))
            .collect();
        for &from in &offsets {
            for &to in offsets.iter().filter(|&&to| to >= from) {
                let stepped = Location::of_offset(src, from).advanced_over(&src[from..to]);
                assert_eq!(stepped, Location::of_offset(src, to), "{from}..{to}");
            }
        }
    }

    #[test]
    fn display_names_file_line_and_column() {
        let e = GrammarError::at(ErrorKind::Syntax, Location { line: 3, column: 7 }, "boom");
        assert_eq!(e.to_string(), "<grammar>:3:7: boom");
        assert_eq!(e.in_file("x.lark").to_string(), "x.lark:3:7: boom");
        let e = GrammarError::new(ErrorKind::TooLarge, "big").in_file("y.json");
        assert_eq!(e.to_string(), "y.json: big");
    }
}
