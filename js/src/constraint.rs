//! The request's constraint compiled over a model's vocabulary (`grammars`, as the page
//! and the command line compile theirs).

use grammars::{Format, TextError, constraint_from_text};
use sampler_core::{DynConstraint, SampleRequest, Vocabulary};

/// The constraint `request` names over `vocab`, or the error as the user should read it (a
/// grammar error with its line and column).
pub fn build(
    request: &SampleRequest,
    vocab: &Vocabulary,
) -> Result<DynConstraint<'static>, String> {
    let (format, text) = request.constraint().map_err(|e| e.to_string())?;
    let format = match format {
        Some(f) => f.parse::<Format>()?,
        None => Format::detect(text),
    };
    let what = match (&request.regex, &request.json_schema) {
        (Some(_), _) => "regex",
        (_, Some(_)) => "jsonSchema",
        _ => "grammar",
    };
    constraint_from_text(format, text, vocab).map_err(|e| match e {
        TextError::Regex(e) => format!("{what}: {e}"),
        TextError::Grammar(e) => e.in_file(what).to_string(),
    })
}
