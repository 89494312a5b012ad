//! The entry point: grammar text in any supported format to a [`CfgConstraint`].

use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::TokEnv;
use llguidance::{Matcher, ParserFactory};
use sampler_core::{Constraint, TokenId, Vocabulary};

use crate::constraint::CfgConstraint;
use crate::engine_errors::classify;
use crate::error::{ErrorKind, GrammarError};
use crate::format::Format;
use crate::gbnf;
use crate::json_keywords::check_keywords;
use crate::limits::Limits;
use crate::tok_env::tok_env;

/// Compiles grammars for one vocabulary (build it once per model: it holds the token trie).
pub struct Compiler {
    factory: ParserFactory,
    vocab_size: usize,
    eos: TokenId,
    limits: Limits,
}

impl std::fmt::Debug for Compiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiler")
            .field("vocab_size", &self.vocab_size)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Compiler {
    /// A compiler for `vocab` with the default [`Limits`].
    pub fn new(vocab: &Vocabulary) -> Result<Self, GrammarError> {
        Self::with_limits(vocab, Limits::default())
    }

    /// A compiler for `vocab` with explicit limits.
    pub fn with_limits(vocab: &Vocabulary, limits: Limits) -> Result<Self, GrammarError> {
        let env: TokEnv = tok_env(vocab);
        let mut factory = ParserFactory::new_simple(&env)
            .map_err(|e| GrammarError::new(ErrorKind::Engine, format!("llguidance: {e}")))?;
        factory.quiet();
        let l = factory.limits_mut();
        l.verbose_errors = false;
        l.max_grammar_size = limits.max_grammar_symbols;
        l.max_lexer_states = limits.max_lexer_states;
        l.step_max_items = limits.max_items_per_mask;
        l.step_lexer_fuel = limits.max_lexer_fuel_per_mask;
        Ok(Compiler {
            factory,
            vocab_size: vocab.len(),
            eos: vocab.eos(),
            limits,
        })
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Compiles `source` in `format` (detected with [`Format::detect`] when `None`).
    ///
    /// Regexes are not compiled here: sampler-core's regex constraint handles them (use
    /// [`Compiler::compile_regex_reference`] for llguidance's view of a regex in tests).
    pub fn compile(
        &self,
        source: &str,
        format: Option<Format>,
    ) -> Result<CfgConstraint, GrammarError> {
        let format = format.unwrap_or_else(|| Format::detect(source));
        if source.len() > self.limits.max_source_bytes {
            return Err(GrammarError::new(
                ErrorKind::TooLarge,
                format!(
                    "grammar source is {} bytes, above the limit of {} bytes (max_source_bytes)",
                    source.len(),
                    self.limits.max_source_bytes
                ),
            ));
        }
        let grammar = match format {
            Format::Lark => TopLevelGrammar::from_lark(source.to_string()),
            Format::Gbnf => TopLevelGrammar::from_lark(gbnf::to_lark(source)?),
            Format::JsonSchema => {
                let value: serde_json::Value = serde_json::from_str(source).map_err(|e| {
                    // serde_json counts the column in bytes, 0 on an empty line.
                    GrammarError::at(
                        ErrorKind::Syntax,
                        crate::error::Location::of_byte_column(source, e.line(), e.column()),
                        format!("invalid JSON: {e}"),
                    )
                })?;
                check_keywords(&value, source)?;
                TopLevelGrammar::from_json_schema(value)
            }
            Format::Regex => {
                return Err(GrammarError::new(
                    ErrorKind::WrongFormat,
                    "regexes are compiled by sampler-core's regex constraint, not by the \
                     grammar compiler (pass the regex with --regex)",
                ));
            }
        };
        self.build(grammar, format, source)
    }

    /// Reads and compiles the file at `path`: the format is `format`, else the one its
    /// extension names, else detected; errors carry the file name.
    pub fn compile_file(
        &self,
        path: &std::path::Path,
        format: Option<Format>,
    ) -> Result<CfgConstraint, GrammarError> {
        let name = path.display().to_string();
        let source = std::fs::read_to_string(path).map_err(|e| {
            GrammarError::new(ErrorKind::Io, format!("cannot read the grammar: {e}")).in_file(&name)
        })?;
        let format = format.or_else(|| Format::from_path(&name));
        self.compile(&source, format).map_err(|e| e.in_file(&name))
    }

    /// llguidance's constraint for a regex (a reference for differential tests of the
    /// regex constraint; samplers should use sampler-core's).
    pub fn compile_regex_reference(&self, regex: &str) -> Result<CfgConstraint, GrammarError> {
        self.build(TopLevelGrammar::from_regex(regex), Format::Regex, regex)
    }

    fn build(
        &self,
        grammar: TopLevelGrammar,
        format: Format,
        source: &str,
    ) -> Result<CfgConstraint, GrammarError> {
        let parser = self
            .factory
            .create_parser(grammar)
            .map_err(|e| classify(&e.to_string(), format, source))?;
        let matcher = Matcher::new(Ok(parser));
        if let Some(e) = matcher.get_error() {
            return Err(classify(&e, format, source));
        }
        let c = CfgConstraint::new(matcher, self.vocab_size, self.eos)?;
        let init = c.initial();
        if c.try_mask(&init)?.is_empty() {
            return Err(GrammarError::new(
                ErrorKind::EmptyLanguage,
                "the constraint matches no string with this vocabulary \
                 (no token may start it and the empty string is not accepted)",
            ));
        }
        Ok(c)
    }
}

/// Compiles `source` for `vocab` in one call (builds a [`Compiler`]; reuse one instead when
/// compiling several grammars for the same vocabulary).
pub fn compile(
    source: &str,
    format: Option<Format>,
    vocab: &Vocabulary,
) -> Result<CfgConstraint, GrammarError> {
    Compiler::new(vocab)?.compile(source, format)
}
