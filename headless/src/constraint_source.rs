//! Turns `--regex`, `--grammar` or `--json-schema` into a constraint over the vocabulary.
//!
//! The format comes from `--grammar-format`, else the file's extension, else detection
//! (docs/grammar-formats.md); `grammars::constraint_from_text` builds the constraint (the
//! page builds its constraints there too). Either way the result is one [`DynConstraint`],
//! so the samplers are compiled once for every kind.

use crate::failure::{Failure, Result, fail};
use grammars::{Format, TextError, constraint_from_text};
use sampler_core::{DynConstraint, Vocabulary};
use std::path::PathBuf;

/// A constraint as the command line or a sweep plan gives it: exactly one of these.
#[derive(Clone, Debug, Default)]
pub struct ConstraintSpec {
    /// A grammar file (format from `format`, else the extension, else detection).
    pub grammar: Option<PathBuf>,
    /// A regular expression the whole output must match.
    pub regex: Option<String>,
    /// A JSON Schema file.
    pub json_schema: Option<PathBuf>,
    /// A grammar given as text (a sweep plan's inline grammar or a file it read; format
    /// as for `grammar`, detection when none is given).
    pub text: Option<String>,
    /// What an error in `text` calls it (a file name, or a sweep's constraint name).
    pub name: Option<String>,
}

/// Builds the constraint `args` names, over `vocab`; `format` is `--grammar-format`.
pub fn build(
    args: &ConstraintSpec,
    format: Option<&str>,
    vocab: &Vocabulary,
) -> Result<DynConstraint<'static>> {
    let format = match format {
        Some(f) => Some(f.parse::<Format>().map_err(Failure)?),
        None => None,
    };
    if let Some(re) = &args.regex {
        if format.is_some_and(|f| f != Format::Regex) {
            return fail(
                "--grammar-format names the format of a --grammar file; --regex is always a \
                 regex",
            );
        }
        return constraint_from_text(Format::Regex, re, vocab)
            .map_err(|e| Failure(format!("--regex: {e}")));
    }
    if let Some(text) = &args.text {
        let format = format.unwrap_or_else(|| Format::detect(text));
        return constraint_from_text(format, text, vocab).map_err(|e| {
            Failure(match e {
                TextError::Regex(e) => format!("{}: {e}", name(args)),
                TextError::Grammar(e) => e.in_file(name(args)).to_string(),
            })
        });
    }
    let (path, default) = match (&args.grammar, &args.json_schema) {
        (Some(p), _) => (p, None),
        (None, Some(p)) => (p, Some(Format::JsonSchema)),
        (None, None) => return fail("give a constraint: --regex, --grammar or --json-schema"),
    };
    // A grammar larger than the compiler takes is refused before it is read into memory.
    let max = grammars::Limits::default().max_source_bytes;
    let size = std::fs::metadata(path)
        .map_err(|e| Failure(format!("{}: {e}", path.display())))?
        .len();
    if size > max as u64 {
        return fail(format!(
            "{}: the grammar file is {size} bytes, above the limit of {max} bytes \
             (max_source_bytes)",
            path.display()
        ));
    }
    let source =
        std::fs::read_to_string(path).map_err(|e| Failure(format!("{}: {e}", path.display())))?;
    let format = format
        .or(default)
        .or_else(|| Format::from_path(&path.to_string_lossy()))
        .unwrap_or_else(|| Format::detect(&source));
    constraint_from_text(format, &source, vocab).map_err(|e| {
        let name = path.display().to_string();
        Failure(match e {
            TextError::Regex(e) => format!("{name}: {e}"),
            TextError::Grammar(e) => e.in_file(&name).to_string(),
        })
    })
}

/// What errors in an inline grammar call it.
fn name(args: &ConstraintSpec) -> String {
    args.name.clone().unwrap_or_else(|| "grammar".into())
}
