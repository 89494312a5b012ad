//! How the views show a token.

use sampler_core::{TokenId, Vocabulary};
use std::rc::Rc;

/// Turns token ids into display text; knows EOS.
#[derive(Clone)]
pub struct Labels {
    eos: TokenId,
    decode: Rc<dyn Fn(TokenId) -> String>,
}

impl std::fmt::Debug for Labels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Labels").field("eos", &self.eos).finish()
    }
}

impl Labels {
    /// Labels from a function (e.g. the real tokenizer's decoder) and the EOS id.
    pub fn new(eos: TokenId, decode: impl Fn(TokenId) -> String + 'static) -> Self {
        Labels {
            eos,
            decode: Rc::new(decode),
        }
    }

    /// Labels from a vocabulary: each token's bytes (lossy UTF-8), `⟨eos⟩` for EOS.
    pub fn from_vocabulary(vocab: &Vocabulary) -> Self {
        let v = vocab.clone();
        Labels::new(vocab.eos(), move |t| crate::toy::token_label(&v, t))
    }

    /// The end-of-sequence token.
    pub fn eos(&self) -> TokenId {
        self.eos
    }

    /// One token's text.
    pub fn label(&self, t: TokenId) -> String {
        (self.decode)(t)
    }

    /// A sequence's text (EOS left out).
    pub fn text(&self, tokens: &[TokenId]) -> String {
        tokens
            .iter()
            .filter(|&&t| t != self.eos)
            .map(|&t| self.label(t))
            .collect()
    }
}
