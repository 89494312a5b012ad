//! A set of token ids stored as a bitset of 64-bit words (the mask format).

use crate::TokenId;

/// A set of tokens over a vocabulary of fixed size, one bit per token.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TokenSet {
    words: Vec<u64>,
    len: usize,
}

impl TokenSet {
    /// The empty set over a vocabulary of `len` tokens.
    pub fn empty(len: usize) -> Self {
        TokenSet {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }
    /// The set of every token.
    pub fn full(len: usize) -> Self {
        let mut s = Self::empty(len);
        for t in 0..len {
            s.insert(t as TokenId);
        }
        s
    }
    /// Builds a set from 32-bit words (the layout the WGSL mask kernel writes).
    pub fn from_u32_words(words: &[u32], len: usize) -> Self {
        let mut s = Self::empty(len);
        for (i, w) in words.iter().enumerate() {
            let word = &mut s.words[i / 2];
            *word |= (*w as u64) << (32 * (i % 2));
        }
        s
    }
    /// The set as 32-bit words, bit `t % 32` of word `t / 32` for token `t`.
    pub fn to_u32_words(&self) -> Vec<u32> {
        let n = self.len.div_ceil(32);
        (0..n)
            .map(|i| (self.words[i / 2] >> (32 * (i % 2))) as u32)
            .collect()
    }
    /// Vocabulary size this set ranges over.
    pub fn universe(&self) -> usize {
        self.len
    }
    /// Adds a token.
    pub fn insert(&mut self, t: TokenId) {
        self.words[t as usize / 64] |= 1 << (t % 64);
    }
    /// Removes a token.
    pub fn remove(&mut self, t: TokenId) {
        self.words[t as usize / 64] &= !(1 << (t % 64));
    }
    /// Whether `t` is in the set.
    pub fn contains(&self, t: TokenId) -> bool {
        (self.words[t as usize / 64] >> (t % 64)) & 1 == 1
    }
    /// Number of tokens in the set.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// Whether no token is in the set.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }
    /// The tokens in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = TokenId> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some((i * 64) as TokenId + b)
            })
        })
    }
    /// Raw 64-bit words.
    pub fn words(&self) -> &[u64] {
        &self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u32_round_trip_and_iter() {
        let mut s = TokenSet::empty(100);
        for t in [0, 31, 32, 63, 64, 99] {
            s.insert(t);
        }
        let w = s.to_u32_words();
        assert_eq!(w.len(), 4);
        assert_eq!(TokenSet::from_u32_words(&w, 100), s);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 31, 32, 63, 64, 99]);
        assert_eq!(s.count(), 6);
        s.remove(31);
        assert!(!s.contains(31) && s.contains(32));
    }
}
