//! Turns `--regex`, `--grammar` or `--json-schema` into a constraint over the vocabulary.
//!
//! Regexes (and `.regex` files) become sampler-core's tensorized regex constraint, so
//! budget-aware methods work; Lark, GBNF and JSON Schema go through `grammars`
//! (llguidance). The format comes from `--grammar-format`, else the file's extension,
//! else detection (docs/grammar-formats.md). Either way the result is one [`DynConstraint`], so the
//! samplers are compiled once for every kind.

use crate::args::ConstraintArgs;
use crate::failure::{Failure, Result, fail};
use grammars::{Compiler, Format};
use sampler_core::{DynConstraint, RegexConstraint, Vocabulary, into_dyn};
use std::path::Path;

/// Builds the constraint the arguments name, over `vocab`.
pub fn build(
    args: &ConstraintArgs,
    format: Option<&str>,
    vocab: &Vocabulary,
) -> Result<DynConstraint<'static>> {
    let format = match format {
        Some(f) => Some(f.parse::<Format>().map_err(Failure)?),
        None => None,
    };
    if let Some(re) = &args.regex {
        return regex(re, vocab).map_err(|e| Failure(format!("--regex: {}", e.0)));
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
    if format == Format::Regex {
        return regex(source.trim_end_matches(['\n', '\r']), vocab)
            .map_err(|e| Failure(format!("{}: {}", path.display(), e.0)));
    }
    cfg(path, &source, format, vocab)
}

fn regex(pattern: &str, vocab: &Vocabulary) -> Result<DynConstraint<'static>> {
    Ok(into_dyn(RegexConstraint::from_regex(pattern, vocab)?))
}

fn cfg(
    path: &Path,
    source: &str,
    format: Format,
    vocab: &Vocabulary,
) -> Result<DynConstraint<'static>> {
    let name = path.display().to_string();
    let c = Compiler::new(vocab)
        .and_then(|c| c.compile(source, Some(format)))
        .map_err(|e| Failure(e.in_file(&name).to_string()))?;
    Ok(into_dyn(c))
}
