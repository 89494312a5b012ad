//! Regex pattern to dense DFA (regex-automata), with full-match semantics and size limits.

use super::error::{RegexError, from_syntax};
use crate::limits::{LimitExceeded, Limits};
use regex_automata::MatchKind;
use regex_automata::dfa::{StartKind, dense};
use regex_automata::nfa::thompson::{self, WhichCaptures};

/// Parses `pattern`, reporting syntax errors with their position.
pub(crate) fn parse(pattern: &str) -> Result<regex_syntax::hir::Hir, RegexError> {
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .map_err(|e| from_syntax(&e))
}

/// Builds an anchored dense DFA with all-matches semantics (so it accepts exactly the
/// language, not only leftmost-first matches).
pub(crate) fn build_dfa(
    pattern: &str,
    limits: &Limits,
) -> Result<dense::DFA<Vec<u32>>, RegexError> {
    let hir = parse(pattern)?;
    let nfa = thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .nfa_size_limit(Some(limits.nfa_size_bytes))
                .which_captures(WhichCaptures::None),
        )
        .build_from_hir(&hir)
        .map_err(|e| match e.size_limit() {
            Some(max) => RegexError::Limit(LimitExceeded {
                limit: "nfa_size_limit",
                max,
                reached: None,
            }),
            None => RegexError::Unsupported(e.to_string()),
        })?;
    dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                .start_kind(StartKind::Anchored)
                .dfa_size_limit(Some(limits.dfa_size_bytes))
                .determinize_size_limit(Some(limits.determinize_size_bytes)),
        )
        .build_from_nfa(&nfa)
        .map_err(|e| {
            let msg = e.to_string();
            if msg.starts_with("DFA exceeded size limit") {
                RegexError::Limit(LimitExceeded {
                    limit: "dfa_size_limit",
                    max: limits.dfa_size_bytes,
                    reached: None,
                })
            } else if msg.starts_with("determinization exceeded size limit") {
                RegexError::Limit(LimitExceeded {
                    limit: "determinize_size_limit",
                    max: limits.determinize_size_bytes,
                    reached: None,
                })
            } else {
                RegexError::Unsupported(msg)
            }
        })
}
