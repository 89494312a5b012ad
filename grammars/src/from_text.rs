//! A constraint from text of any format: regexes become sampler-core's tensorized regex
//! constraint (so budget-aware methods work), Lark, GBNF and JSON Schema compile with
//! llguidance. The command line and the page both build their constraints here.

use crate::{Compiler, Format, GrammarError};
use sampler_core::{DynConstraint, RegexConstraint, RegexError, Vocabulary, into_dyn};
use std::fmt;

/// Why text did not become a constraint: the regex's error or the grammar's, each with
/// its position where known.
#[derive(Clone, Debug, PartialEq)]
pub enum TextError {
    /// The regex does not compile (syntax with line and column, empty language, limits).
    Regex(RegexError),
    /// The grammar or schema does not compile.
    Grammar(GrammarError),
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextError::Regex(e) => e.fmt(f),
            TextError::Grammar(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TextError {}

/// Builds constraints for one vocabulary; keeps llguidance's compiler (its token trie,
/// costly to build on a real vocabulary) for every grammar after the first.
pub struct ConstraintBuilder {
    vocab: Vocabulary,
    compiler: Option<Compiler>,
}

impl fmt::Debug for ConstraintBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConstraintBuilder")
            .field("vocab_size", &self.vocab.len())
            .field("compiler", &self.compiler.is_some())
            .finish()
    }
}

impl ConstraintBuilder {
    /// A builder for `vocab` (llguidance's compiler is made on the first grammar).
    pub fn new(vocab: Vocabulary) -> Self {
        ConstraintBuilder {
            vocab,
            compiler: None,
        }
    }

    /// The vocabulary constraints are built over.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocab
    }

    /// Makes llguidance's compiler now (if not made yet), so that the first grammar does
    /// not wait for it: the page's workers call this once their model is loaded.
    pub fn make_compiler(&mut self) -> Result<(), TextError> {
        if self.compiler.is_none() {
            self.compiler = Some(Compiler::new(&self.vocab).map_err(TextError::Grammar)?);
        }
        Ok(())
    }

    /// Compiles `text` as `format`. A regex's trailing line break (from a file or an
    /// editor) is not part of its pattern.
    pub fn build(
        &mut self,
        format: Format,
        text: &str,
    ) -> Result<DynConstraint<'static>, TextError> {
        if format == Format::Regex {
            let pattern = text.trim_end_matches(['\n', '\r']);
            let c = RegexConstraint::from_regex(pattern, &self.vocab).map_err(TextError::Regex)?;
            return Ok(into_dyn(c));
        }
        self.make_compiler()?;
        let compiler = self.compiler.as_ref().expect("made above");
        let c = compiler
            .compile(text, Some(format))
            .map_err(TextError::Grammar)?;
        Ok(into_dyn(c))
    }
}

/// Compiles `text` as `format` over `vocab` in one call (a [`ConstraintBuilder`] keeps the
/// compiler for several grammars over one vocabulary).
pub fn constraint_from_text(
    format: Format,
    text: &str,
    vocab: &Vocabulary,
) -> Result<DynConstraint<'static>, TextError> {
    ConstraintBuilder::new(vocab.clone()).build(format, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sampler_core::{Constraint, TokenId};

    fn vocab() -> Vocabulary {
        Vocabulary::new(vec![b"a".to_vec(), b"b".to_vec(), b"</s>".to_vec()], 2, &[])
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
    fn every_format_builds_the_same_language() {
        let mut b = ConstraintBuilder::new(vocab());
        let sources = [
            (Format::Regex, "ab+\n"),
            (Format::Lark, "start: \"a\" \"b\"+\n"),
            (Format::Gbnf, "root ::= \"a\" \"b\"+\n"),
        ];
        let built: Vec<_> = sources
            .iter()
            .map(|(f, t)| b.build(*f, t).unwrap())
            .collect();
        assert!(
            built[0].regular().is_some(),
            "a regex keeps its tensorized automaton"
        );
        for w in [&[0, 1][..], &[0, 1, 1], &[0], &[1], &[0, 0, 1]] {
            let want = accepts(&built[0], w);
            for c in &built[1..] {
                assert_eq!(accepts(c, w), want, "{w:?}");
            }
        }
    }

    #[test]
    fn the_compiler_made_ahead_is_the_one_grammars_use() {
        let mut b = ConstraintBuilder::new(vocab());
        assert!(format!("{b:?}").contains("compiler: false"));
        b.make_compiler().unwrap();
        assert!(format!("{b:?}").contains("compiler: true"));
        b.make_compiler().unwrap();
        let c = b.build(Format::Lark, "start: \"a\" \"b\"\n").unwrap();
        assert!(accepts(&c, &[0, 1]) && !accepts(&c, &[0]));
    }

    #[test]
    fn errors_keep_their_kind_and_position() {
        match constraint_from_text(Format::Regex, "a(b", &vocab()) {
            Err(TextError::Regex(RegexError::Syntax { line, .. })) => assert_eq!(line, 1),
            other => panic!("{other:?}"),
        }
        match constraint_from_text(Format::Gbnf, "root ::= \"a\"\nroot2 ::= x\n", &vocab()) {
            Err(TextError::Grammar(e)) => assert_eq!(e.location.map(|l| l.line), Some(2), "{e}"),
            other => panic!("{other:?}"),
        }
    }
}
