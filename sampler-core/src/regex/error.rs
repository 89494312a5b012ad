//! Why a regex could not be compiled into a constraint.

use crate::limits::LimitExceeded;

/// An error compiling a regex: bad syntax (with its position), an empty language, a size
/// limit, or a feature the DFA cannot express.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegexError {
    /// The pattern does not parse.
    Syntax {
        /// What is wrong.
        message: String,
        /// Byte offset of the start of the offending span (0-based).
        offset: usize,
        /// Line of the offending span (1-based).
        line: usize,
        /// Column of the offending span, in characters (1-based).
        column: usize,
    },
    /// The pattern matches no string at all.
    EmptyLanguage,
    /// A size limit was exceeded.
    Limit(LimitExceeded),
    /// The pattern uses a feature the DFA engine does not support.
    Unsupported(String),
}

impl std::fmt::Display for RegexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegexError::Syntax {
                message,
                offset,
                line,
                column,
            } => write!(
                f,
                "invalid regex at byte offset {offset} (line {line}, column {column}): {message}"
            ),
            RegexError::EmptyLanguage => f.write_str("the constraint matches no string"),
            RegexError::Limit(e) => e.fmt(f),
            RegexError::Unsupported(m) => write!(f, "unsupported regex: {m}"),
        }
    }
}

impl std::error::Error for RegexError {}

impl From<LimitExceeded> for RegexError {
    fn from(e: LimitExceeded) -> Self {
        RegexError::Limit(e)
    }
}

/// Converts a regex-syntax error into [`RegexError::Syntax`], keeping its span.
pub(crate) fn from_syntax(err: &regex_syntax::Error) -> RegexError {
    let (message, span) = match err {
        regex_syntax::Error::Parse(e) => (e.kind().to_string(), *e.span()),
        regex_syntax::Error::Translate(e) => (e.kind().to_string(), *e.span()),
        other => {
            let p = regex_syntax::ast::Position::new(0, 1, 1);
            (other.to_string(), regex_syntax::ast::Span::new(p, p))
        }
    };
    RegexError::Syntax {
        message,
        offset: span.start.offset,
        line: span.start.line,
        column: span.start.column,
    }
}
