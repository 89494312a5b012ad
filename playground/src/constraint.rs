//! Grammar text of any kind to one constraint type the runner and the exact enumeration
//! take, with errors located by line and column for the editor.

use crate::detect::GrammarKind;
use sampler_core::{DynConstraint, Vocabulary};
use std::fmt;

/// Why a grammar did not compile: a one-line message and, where known, its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrammarError {
    /// 1-based line of the fault, when known.
    pub line: Option<usize>,
    /// 1-based column (in characters) of the fault, when known.
    pub col: Option<usize>,
    /// What is wrong, one line.
    pub message: String,
}

impl GrammarError {
    fn plain(message: impl Into<String>) -> Self {
        GrammarError {
            line: None,
            col: None,
            message: one_line(&message.into()),
        }
    }
}

fn one_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_string()
}

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.col) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: {}", self.message),
            (Some(l), None) => write!(f, "line {l}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for GrammarError {}

impl From<grammars::GrammarError> for GrammarError {
    fn from(e: grammars::GrammarError) -> Self {
        GrammarError {
            line: e.location.map(|l| l.line),
            col: e.location.map(|l| l.column),
            message: one_line(&e.message),
        }
    }
}

impl From<sampler_core::RegexError> for GrammarError {
    fn from(e: sampler_core::RegexError) -> Self {
        match e {
            sampler_core::RegexError::Syntax {
                message,
                line,
                column,
                ..
            } => GrammarError {
                line: Some(line),
                col: Some(column),
                message: one_line(&message),
            },
            other => GrammarError::plain(other.to_string()),
        }
    }
}

/// One line for the page: the compile time `ms` (measured by the caller, since wasm32 has
/// no `Instant`) and, for a tensorized regex, its size (states S, edges E, bytes of the
/// edge-by-token bitset B_f); grammars and schemas run by llguidance say so.
pub fn compile_note(c: &DynConstraint<'_>, ms: f64) -> String {
    let head = format!("constraint compiled in {ms:.1} ms");
    match c.regular().and_then(|r| r.tensorized()) {
        Some(t) => format!(
            "{head} · tensorized: {} states, {} edges, {} bytes of B_f",
            t.num_states,
            t.num_edges(),
            t.bf_bytes()
        ),
        None => format!("{head} (llguidance)"),
    }
}

/// Builds constraints for one vocabulary (`grammars::ConstraintBuilder`, which keeps
/// llguidance's compiler, so editing the grammar recompiles quickly), under the page's cap
/// on grammar size, with errors located for the editor. Build one per model.
#[derive(Debug)]
pub struct ConstraintBuilder(grammars::ConstraintBuilder);

impl ConstraintBuilder {
    /// A builder for `vocab` (llguidance's compiler is made on the first grammar).
    pub fn new(vocab: Vocabulary) -> Self {
        ConstraintBuilder(grammars::ConstraintBuilder::new(vocab))
    }

    /// The vocabulary constraints are built over.
    pub fn vocabulary(&self) -> &Vocabulary {
        self.0.vocabulary()
    }

    /// Makes llguidance's compiler ahead of the first grammar (a worker does once its
    /// model is loaded; a failure here comes back with that grammar's build).
    pub fn make_compiler(&mut self) -> Result<(), GrammarError> {
        self.0.make_compiler().map_err(from_text_error)
    }

    /// Compiles `text` as `kind`.
    pub fn build(
        &mut self,
        kind: GrammarKind,
        text: &str,
    ) -> Result<DynConstraint<'static>, GrammarError> {
        if text.len() > crate::state::caps::GRAMMAR_BYTES {
            return Err(GrammarError::plain(format!(
                "the grammar is {} bytes, above the limit of {}",
                text.len(),
                crate::state::caps::GRAMMAR_BYTES
            )));
        }
        self.0.build(kind.format(), text).map_err(from_text_error)
    }
}

/// The grammars crate's error as the page's, keeping its kind and position.
fn from_text_error(e: grammars::TextError) -> GrammarError {
    match e {
        grammars::TextError::Regex(e) => e.into(),
        grammars::TextError::Grammar(e) => e.into(),
    }
}

/// Compiles `text` as `kind` over `vocab` in one call (use [`ConstraintBuilder`] to compile
/// several grammars for one vocabulary).
pub fn build_constraint(
    kind: GrammarKind,
    text: &str,
    vocab: &Vocabulary,
) -> Result<DynConstraint<'static>, GrammarError> {
    ConstraintBuilder::new(vocab.clone()).build(kind, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::ToyModel;
    use crate::toy::GSK_REGEX;
    use sampler_core::{Constraint, TokenId};

    fn gsk() -> Vocabulary {
        ToyModel::Gsk.vocabulary()
    }

    fn accepts(c: &DynConstraint<'_>, tokens: &[TokenId]) -> bool {
        let mut s = c.initial();
        for &t in tokens {
            match c.advance(&s, t) {
                Some(n) => s = n,
                None => return false,
            }
        }
        c.is_complete(&s)
    }

    #[test]
    fn regex_and_gbnf_gsk_agree() {
        let r = build_constraint(GrammarKind::Regex, GSK_REGEX, &gsk()).unwrap();
        let g = build_constraint(
            GrammarKind::Gbnf,
            include_str!("../../assets/examples/gsk.gbnf"),
            &gsk(),
        )
        .unwrap();
        assert!(r.regular().is_some() && g.regular().is_none());
        for w in 0..64u32 {
            for len in 0..=6 {
                let tokens: Vec<TokenId> = (0..len).map(|i| (w >> i) & 1).collect();
                assert_eq!(accepts(&r, &tokens), accepts(&g, &tokens), "{tokens:?}");
                assert_eq!(
                    accepts(&r, &tokens),
                    len == 5 && (tokens[0] == 1 || tokens == [0; 5])
                );
            }
        }
    }

    #[test]
    fn compile_note_names_time_and_tensor_size() {
        let r = build_constraint(GrammarKind::Regex, GSK_REGEX, &gsk()).unwrap();
        let t = r
            .regular()
            .and_then(|r| r.tensorized())
            .expect("regexes are tensorized");
        // 00000 | 1[01]{4}: at least six states on the way plus the final one.
        assert!(t.num_states >= 7 && t.num_edges() >= 6, "{t:?}");
        assert_eq!(
            compile_note(&r, 12.34),
            format!(
                "constraint compiled in 12.3 ms · tensorized: {} states, {} edges, {} bytes of B_f",
                t.num_states,
                t.num_edges(),
                t.bf_bytes()
            )
        );
        let g = build_constraint(
            GrammarKind::Gbnf,
            include_str!("../../assets/examples/gsk.gbnf"),
            &gsk(),
        )
        .unwrap();
        assert_eq!(
            compile_note(&g, 3.0),
            "constraint compiled in 3.0 ms (llguidance)"
        );
    }

    /// A byte-level vocabulary: one token per byte, EOS last.
    fn bytes() -> Vocabulary {
        let mut t: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        t.push(Vec::new());
        Vocabulary::new(t, 256, &[256])
    }

    #[test]
    fn every_example_compiles_as_its_kind() {
        let v = bytes();
        let mut b = ConstraintBuilder::new(v);
        for e in crate::examples::examples()
            .iter()
            .filter(|e| e.toy.is_none())
        {
            let c = b
                .build(e.kind, e.grammar)
                .unwrap_or_else(|m| panic!("{}: {m}", e.id));
            assert_eq!(
                c.regular().is_some(),
                e.kind == GrammarKind::Regex,
                "{}",
                e.id
            );
            assert!(!c.mask(&c.initial()).is_empty(), "{}", e.id);
        }
    }

    #[test]
    fn a_blowing_up_regex_is_refused_not_built() {
        // The DFA of "an `a` 25 bytes from the end" has 2^25 states: over the limits.
        let e = build_constraint(GrammarKind::Regex, "[ab]*a[ab]{25}", &bytes()).unwrap_err();
        assert!(e.line.is_none() && e.message.contains("limit"), "{e}");
    }

    #[test]
    fn errors_have_line_and_column() {
        let e = build_constraint(GrammarKind::Regex, "0(1", &gsk()).unwrap_err();
        assert_eq!((e.line, e.col), (Some(1), Some(2)), "{e}");
        let e = build_constraint(
            GrammarKind::Gbnf,
            "root ::= \"0\"\nx ::= \"1\" @ \"2\"\n",
            &gsk(),
        )
        .unwrap_err();
        assert_eq!((e.line, e.col), (Some(2), Some(11)), "{e}");
        let e = build_constraint(GrammarKind::JsonSchema, "{\n \"type\": }", &gsk()).unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        assert!(!e.to_string().contains('\n'));
        let big = "0".repeat(crate::state::caps::GRAMMAR_BYTES + 1);
        let e = build_constraint(GrammarKind::Regex, &big, &gsk()).unwrap_err();
        assert!(e.message.contains("limit"), "{e}");
    }
}
