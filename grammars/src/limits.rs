//! Size limits applied while compiling a grammar.

/// Limits on grammar size and on the work of one mask. A grammar over a size limit is a
/// [`crate::ErrorKind::TooLarge`] error at compile time; a mask over its work limit is an
/// llguidance error at run time (returned by `try_mask`, kept for `take_error`), never a
/// silently smaller mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest grammar source accepted, in bytes.
    pub max_source_bytes: usize,
    /// Largest grammar after translation, in llguidance symbols (its `max_grammar_size`).
    pub max_grammar_symbols: usize,
    /// Largest number of lexer states llguidance may build (its `max_lexer_states`).
    pub max_lexer_states: usize,
    /// Most Earley items one mask may create (llguidance's `step_max_items`, default
    /// 50 000 there). Translated GBNF uses one-character terminals, which need more items
    /// per mask than long Lark terminals, so the default here is ten times higher.
    pub max_items_per_mask: usize,
    /// Most lexer work one mask may spend (llguidance's `step_lexer_fuel`, about 100 ns a
    /// unit; default 200 000 there, ten times that here).
    pub max_lexer_fuel_per_mask: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_source_bytes: 1 << 20,
            max_grammar_symbols: 500_000,
            max_lexer_states: 250_000,
            max_items_per_mask: 500_000,
            max_lexer_fuel_per_mask: 2_000_000,
        }
    }
}
