//! Size limits applied while compiling a grammar.

/// Limits on grammar size; exceeding one is a [`crate::ErrorKind::TooLarge`] error that
/// names the limit and the size reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest grammar source accepted, in bytes.
    pub max_source_bytes: usize,
    /// Largest grammar after translation, in llguidance symbols (its `max_grammar_size`).
    pub max_grammar_symbols: usize,
    /// Largest number of lexer states llguidance may build (its `max_lexer_states`).
    pub max_lexer_states: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_source_bytes: 1 << 20,
            max_grammar_symbols: 500_000,
            max_lexer_states: 250_000,
        }
    }
}
