//! A constraint that is an explicit finite set of byte strings.

use crate::{Constraint, TokenId, Vocabulary};

/// The language given as a list of byte strings; its state is the bytes generated so far.
#[derive(Clone, Debug)]
pub struct FiniteLanguage {
    vocab: Vocabulary,
    words: Vec<Vec<u8>>,
}

impl FiniteLanguage {
    /// The constraint "the output's bytes are one of `words`" over `vocab`.
    pub fn new(vocab: Vocabulary, mut words: Vec<Vec<u8>>) -> Self {
        words.sort();
        words.dedup();
        FiniteLanguage { vocab, words }
    }

    /// The strings of the language, sorted.
    pub fn words(&self) -> &[Vec<u8>] {
        &self.words
    }

    /// The vocabulary the constraint is over.
    pub fn vocabulary(&self) -> &Vocabulary {
        &self.vocab
    }

    fn viable(&self, bytes: &[u8]) -> bool {
        self.words.iter().any(|w| w.starts_with(bytes))
    }
}

impl Constraint for FiniteLanguage {
    type State = Vec<u8>;

    fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    fn eos(&self) -> TokenId {
        self.vocab.eos()
    }

    fn initial(&self) -> Vec<u8> {
        Vec::new()
    }

    fn advance(&self, state: &Vec<u8>, token: TokenId) -> Option<Vec<u8>> {
        if token == self.eos() {
            return self.is_complete(state).then(|| state.clone());
        }
        if self.vocab.is_special(token) {
            return None;
        }
        let mut next = state.clone();
        next.extend_from_slice(self.vocab.bytes(token));
        self.viable(&next).then_some(next)
    }

    fn is_complete(&self, state: &Vec<u8>) -> bool {
        self.words.binary_search(state).is_ok()
    }
}
