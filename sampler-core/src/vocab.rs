//! The byte string of every token: what lifts byte-level automata to token level.

use crate::TokenId;

/// The vocabulary as byte strings, with the EOS token and the tokens that never appear
/// in generated text (other special tokens).
#[derive(Clone, Debug)]
pub struct Vocabulary {
    tokens: Vec<Vec<u8>>,
    eos: TokenId,
    special: Vec<bool>,
}

impl Vocabulary {
    /// Builds a vocabulary; `special` tokens (besides EOS) are never allowed by constraints.
    pub fn new(tokens: Vec<Vec<u8>>, eos: TokenId, special: &[TokenId]) -> Self {
        let mut is_special = vec![false; tokens.len()];
        for &t in special {
            is_special[t as usize] = true;
        }
        Vocabulary {
            tokens,
            eos,
            special: is_special,
        }
    }
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }
    /// Whether the vocabulary has no tokens.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
    /// The end-of-sequence token.
    pub fn eos(&self) -> TokenId {
        self.eos
    }
    /// The bytes token `t` stands for.
    pub fn bytes(&self, t: TokenId) -> &[u8] {
        &self.tokens[t as usize]
    }
    /// Whether `t` is a special token other than EOS (never generated under a constraint).
    pub fn is_special(&self, t: TokenId) -> bool {
        self.special[t as usize]
    }
    /// Concatenated bytes of a token sequence (EOS and special tokens contribute nothing).
    pub fn decode(&self, tokens: &[TokenId]) -> Vec<u8> {
        let mut out = Vec::new();
        for &t in tokens {
            if t != self.eos && !self.is_special(t) {
                out.extend_from_slice(self.bytes(t));
            }
        }
        out
    }
    /// `bytes` as tokens, longest match first (for small vocabularies without a tokenizer
    /// of their own: toy and function models), or the bytes no token spells.
    pub fn encode_longest(&self, mut bytes: &[u8]) -> Result<Vec<TokenId>, String> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let best = (0..self.len() as TokenId)
                .filter(|&t| t != self.eos && !self.is_special(t) && !self.bytes(t).is_empty())
                .filter(|&t| bytes.starts_with(self.bytes(t)))
                .max_by_key(|&t| self.bytes(t).len());
            match best {
                Some(t) => {
                    out.push(t);
                    bytes = &bytes[self.bytes(t).len()..];
                }
                None => {
                    return Err(format!(
                        "the vocabulary cannot spell {:?}",
                        String::from_utf8_lossy(bytes)
                    ));
                }
            }
        }
        Ok(out)
    }
}
