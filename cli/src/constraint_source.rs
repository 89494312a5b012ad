//! Turns `--regex`, `--grammar` or `--json-schema` into a constraint over the vocabulary.

use crate::args::ConstraintArgs;
use crate::failure::{Failure, Result, fail};
use sampler_core::{Constraint, RegexConstraint, Vocabulary};
use std::path::Path;

/// Code that runs with a constraint of any concrete type (the trait has an associated
/// state type, so it is not object-safe; this visitor keeps the samplers monomorphic).
pub trait ConstraintUser {
    /// Runs with `constraint`.
    fn run<C: Constraint>(self, constraint: &C) -> Result<()>;
}

/// A built constraint of one of the supported kinds.
pub enum Built {
    /// A regular expression over the output's bytes (tensorized, so budget masks work).
    Regex(Box<RegexConstraint>),
}

impl Built {
    /// Hands the concrete constraint to `user`.
    pub fn dispatch(&self, user: impl ConstraintUser) -> Result<()> {
        match self {
            Built::Regex(c) => user.run(c.as_ref()),
        }
    }
}

/// Builds the constraint the arguments name, over `vocab`.
pub fn build(args: &ConstraintArgs, format: Option<&str>, vocab: &Vocabulary) -> Result<Built> {
    if let Some(re) = &args.regex {
        return regex(re, vocab).map_err(|e| Failure(format!("--regex: {e}")));
    }
    if let Some(path) = &args.grammar {
        let text = read(path)?;
        let fmt = format
            .map(str::to_string)
            .or_else(|| path.extension().map(|e| e.to_string_lossy().into_owned()))
            .unwrap_or_default();
        return match fmt.as_str() {
            "regex" => regex(text.trim_end_matches(['\n', '\r']), vocab)
                .map_err(|e| Failure(format!("{}: {e}", path.display()))),
            other => fail(format!(
                "{}: grammar format {other:?} is not supported by this build (use .regex)",
                path.display()
            )),
        };
    }
    if let Some(path) = &args.json_schema {
        return fail(format!(
            "{}: JSON Schema constraints are not supported by this build",
            path.display()
        ));
    }
    fail("give a constraint: --regex, --grammar or --json-schema")
}

fn regex(pattern: &str, vocab: &Vocabulary) -> Result<Built> {
    Ok(Built::Regex(Box::new(RegexConstraint::from_regex(
        pattern, vocab,
    )?)))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Failure(format!("{}: {e}", path.display())))
}
