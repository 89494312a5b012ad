//! How the views show a token.

use sampler_core::{TokenId, Vocabulary};
use std::rc::Rc;

/// A token's text.
type LabelFn = Rc<dyn Fn(TokenId) -> String>;
/// A sequence's text.
type TextFn = Rc<dyn Fn(&[TokenId]) -> String>;

/// Turns token ids into display text; knows EOS.
#[derive(Clone)]
pub struct Labels {
    eos: TokenId,
    decode: LabelFn,
    text: Option<TextFn>,
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
            text: None,
        }
    }

    /// The same labels, with sequences decoded by `text` as a whole (so that a character
    /// whose UTF-8 bytes are split across tokens still shows as one character).
    pub fn with_text(mut self, text: impl Fn(&[TokenId]) -> String + 'static) -> Self {
        self.text = Some(Rc::new(text));
        self
    }

    /// Labels from a vocabulary: each token's bytes (lossy UTF-8), `⟨eos⟩` for EOS.
    pub fn from_vocabulary(vocab: &Vocabulary) -> Self {
        let v = vocab.clone();
        let w = vocab.clone();
        Labels::new(vocab.eos(), move |t| crate::toy::token_label(&v, t)).with_text(move |ts| {
            let valid: Vec<TokenId> = ts
                .iter()
                .copied()
                .filter(|&t| (t as usize) < w.len())
                .collect();
            String::from_utf8_lossy(&w.decode(&valid)).into_owned()
        })
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
        if let Some(f) = &self.text {
            return f(tokens);
        }
        tokens
            .iter()
            .filter(|&&t| t != self.eos)
            .map(|&t| self.label(t))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_characters_join_in_text() {
        // "é" is two bytes, here two tokens.
        let v = Vocabulary::new(vec![vec![0xC3], vec![0xA9], b"x".to_vec(), vec![]], 3, &[3]);
        let l = Labels::from_vocabulary(&v);
        assert_eq!(l.text(&[0, 1, 2, 3]), "éx");
        assert_eq!(l.label(3), "⟨eos⟩");
        assert_eq!(l.label(0), "\u{FFFD}");
        // Out-of-range ids from a broken stream do not panic.
        assert_eq!(l.text(&[2, 99]), "x");
        assert_eq!(l.label(99), "⟨99⟩");
        let plain = Labels::new(3, |t| format!("[{t}]"));
        assert_eq!(plain.text(&[0, 1, 3]), "[0][1]");
    }
}
