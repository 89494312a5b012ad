//! Grammar formats: chosen by file extension or detected from the text (docs/grammar-formats.md).

use std::fmt;
use std::str::FromStr;

/// A grammar input format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// llguidance's Lark dialect.
    Lark,
    /// llama.cpp's GBNF, translated to Lark by [`crate::gbnf`].
    Gbnf,
    /// JSON Schema, compiled by llguidance.
    JsonSchema,
    /// A regular expression (compiled by sampler-core, not here).
    Regex,
}

impl Format {
    /// The format a file extension names (`lark`, `gbnf`, `ebnf`, `regex`, `json`), if any.
    pub fn from_extension(ext: &str) -> Option<Format> {
        match ext.to_ascii_lowercase().as_str() {
            "lark" => Some(Format::Lark),
            "gbnf" | "ebnf" => Some(Format::Gbnf),
            "regex" | "re" => Some(Format::Regex),
            "json" => Some(Format::JsonSchema),
            _ => None,
        }
    }

    /// The format of the file at `path`, from its extension.
    pub fn from_path(path: &str) -> Option<Format> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        Self::from_extension(ext)
    }

    /// Detects the format of `source` (docs/grammar-formats.md): a JSON object with a
    /// schema keyword means JSON Schema; `::=` means GBNF; a `name:` rule line or a
    /// `%import`/`%ignore`/`%llguidance` line means Lark; anything else is a regex.
    pub fn detect(source: &str) -> Format {
        let trimmed = source.trim_start();
        if trimmed.starts_with('{')
            && let Ok(serde_json::Value::Object(map)) =
                serde_json::from_str::<serde_json::Value>(source)
            && [
                "type",
                "properties",
                "$schema",
                "$ref",
                "anyOf",
                "oneOf",
                "allOf",
                "enum",
                "const",
            ]
            .iter()
            .any(|k| map.contains_key(*k))
        {
            return Format::JsonSchema;
        }
        if source.contains("::=") {
            return Format::Gbnf;
        }
        if source.lines().any(looks_like_lark_rule) {
            return Format::Lark;
        }
        Format::Regex
    }

    /// The canonical name (`lark`, `gbnf`, `json-schema`, `regex`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Lark => "lark",
            Format::Gbnf => "gbnf",
            Format::JsonSchema => "json-schema",
            Format::Regex => "regex",
        }
    }
}

/// Whether a line starts a Lark rule or terminal definition (`name: …`, `?name: …`,
/// `name.2: …`) or is a `%import`/`%ignore` directive. The colon must be followed by a
/// blank or the end of the line, so regexes such as `https?://…` or `a:b` are not rules.
fn looks_like_lark_rule(line: &str) -> bool {
    let line = line.trim_start();
    if ["%import", "%ignore", "%llguidance"]
        .iter()
        .any(|d| line.starts_with(d))
    {
        return true;
    }
    let body = line.strip_prefix(['?', '!']).unwrap_or(line);
    if !body.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    let name_len = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    let mut rest = &body[name_len..];
    if let Some(priority) = rest.strip_prefix('.') {
        rest = priority.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let Some(after) = rest.trim_start_matches([' ', '\t']).strip_prefix(':') else {
        return false;
    };
    after.is_empty() || after.starts_with(char::is_whitespace)
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "lark" => Ok(Format::Lark),
            "gbnf" | "ebnf" => Ok(Format::Gbnf),
            "json" | "json-schema" | "jsonschema" => Ok(Format::JsonSchema),
            "regex" | "re" => Ok(Format::Regex),
            other => Err(format!(
                "unknown grammar format `{other}` (expected lark, gbnf, json-schema or regex)"
            )),
        }
    }
}
