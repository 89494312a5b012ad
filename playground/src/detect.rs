//! Which kind of grammar a text is (docs/grammar-formats.md): detected on input, always switchable.

use grammars::Format;
use serde::{Deserialize, Serialize};

/// The kinds of constraint text the playground accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum GrammarKind {
    /// A regular expression over the output (sampler-core's regex constraint).
    #[default]
    Regex,
    /// llguidance's Lark dialect.
    Lark,
    /// llama.cpp's GBNF.
    Gbnf,
    /// A JSON Schema.
    JsonSchema,
}

impl GrammarKind {
    /// Every kind, in menu order.
    pub const ALL: [GrammarKind; 4] = [
        GrammarKind::Regex,
        GrammarKind::Lark,
        GrammarKind::Gbnf,
        GrammarKind::JsonSchema,
    ];

    /// The name shown in the kind switch (`regex`, `lark`, `gbnf`, `json-schema`).
    pub fn name(self) -> &'static str {
        self.format().name()
    }

    /// The name parsed back (`regex`, `lark`, `gbnf`, `json-schema`); `None` otherwise.
    pub fn from_name(name: &str) -> Option<GrammarKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The `grammars` crate's format.
    pub fn format(self) -> Format {
        match self {
            GrammarKind::Regex => Format::Regex,
            GrammarKind::Lark => Format::Lark,
            GrammarKind::Gbnf => Format::Gbnf,
            GrammarKind::JsonSchema => Format::JsonSchema,
        }
    }

    /// The kind a file extension names (`.regex`, `.lark`, `.gbnf`, `.json`, ...).
    pub fn from_path(path: &str) -> Option<GrammarKind> {
        Format::from_path(path).map(GrammarKind::from)
    }
}

impl From<Format> for GrammarKind {
    fn from(f: Format) -> Self {
        match f {
            Format::Regex => GrammarKind::Regex,
            Format::Lark => GrammarKind::Lark,
            Format::Gbnf => GrammarKind::Gbnf,
            Format::JsonSchema => GrammarKind::JsonSchema,
        }
    }
}

/// Detects the kind of `text`: a JSON object with `type`/`properties` (or another schema
/// keyword) → JSON Schema; `::=` → GBNF; a `name:` rule line or a `%` directive line →
/// Lark; otherwise a regex. The same rules as the command line (`grammars::Format::detect`).
pub fn detect_kind(text: &str) -> GrammarKind {
    Format::detect(text).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_each_kind() {
        assert_eq!(detect_kind("root ::= \"a\"+"), GrammarKind::Gbnf);
        assert_eq!(
            detect_kind("start: \"a\" b\nb: /[0-9]+/"),
            GrammarKind::Lark
        );
        assert_eq!(
            detect_kind(r#"{"type": "object", "properties": {}}"#),
            GrammarKind::JsonSchema
        );
        assert_eq!(detect_kind("[0-9]{4}-[0-9]{2}"), GrammarKind::Regex);
        assert_eq!(detect_kind("https?://x\\.com"), GrammarKind::Regex);
        // A JSON object without schema keywords is not a schema.
        assert_eq!(detect_kind(r#"{"a": 1}"#), GrammarKind::Regex);
    }

    #[test]
    fn names_round_trip() {
        for k in GrammarKind::ALL {
            assert_eq!(GrammarKind::from_name(k.name()), Some(k));
            assert_eq!(
                serde_json::to_value(k).unwrap(),
                serde_json::Value::String(k.name().into())
            );
        }
        assert_eq!(GrammarKind::from_name("yaml"), None);
    }
}
