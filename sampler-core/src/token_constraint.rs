//! Any [`ByteAutomaton`] lifted to a token-level [`Constraint`] through a [`TokenTrie`].

use crate::Vocabulary;
use crate::limits::{LimitExceeded, Limits};
use crate::regex::{RegexAutomaton, RegexError};
use crate::{
    ByteAutomaton, Constraint, Regular, TensorizedAutomaton, TokenId, TokenSet, TokenTrie,
};
use std::collections::HashMap;

/// The tensorized form and the state index a regular constraint needs for budget masks.
#[derive(Clone, Debug)]
struct Budget<S> {
    tensor: TensorizedAutomaton,
    index: HashMap<S, u32>,
}

/// A token-level constraint from a byte automaton: a token is allowed when its bytes keep
/// the automaton alive; EOS exactly when the automaton accepts; special tokens never.
///
/// The plain mask is byte-level viability; the budget mask (even with an unlimited budget)
/// is token-level: it keeps only tokens after which some token sequence reaches EOS. The
/// two differ only when the vocabulary cannot spell some completion.
#[derive(Clone, Debug)]
pub struct TokenConstraint<A: ByteAutomaton> {
    automaton: A,
    vocab: Vocabulary,
    trie: TokenTrie,
    budget: Option<Budget<A::State>>,
}

/// A regex lifted to tokens, with budget-aware masks.
pub type RegexConstraint = TokenConstraint<RegexAutomaton>;

impl<A: ByteAutomaton> TokenConstraint<A> {
    /// Lifts `automaton` to the tokens of `vocab` (no budget masks).
    pub fn new(automaton: A, vocab: &Vocabulary) -> Self {
        let trie = TokenTrie::new(vocab);
        TokenConstraint {
            automaton,
            vocab: vocab.clone(),
            trie,
            budget: None,
        }
    }

    /// Lifts a finite-state `automaton` and tensorizes it, so that [`Constraint::regular`]
    /// answers (budget masks, the tensorized automaton).
    pub fn new_regular(
        automaton: A,
        vocab: &Vocabulary,
        limits: &Limits,
    ) -> Result<Self, LimitExceeded> {
        let mut c = Self::new(automaton, vocab);
        let (tensor, index) =
            TensorizedAutomaton::build_indexed(&c.automaton, &c.trie, vocab, limits)?;
        c.budget = Some(Budget { tensor, index });
        Ok(c)
    }

    /// The byte automaton underneath.
    pub fn automaton(&self) -> &A {
        &self.automaton
    }

    /// The token trie used for masks.
    pub fn trie(&self) -> &TokenTrie {
        &self.trie
    }

    /// The tensorized automaton, when built with [`TokenConstraint::new_regular`].
    pub fn tensorized(&self) -> Option<&TensorizedAutomaton> {
        self.budget.as_ref().map(|b| &b.tensor)
    }

    /// The mask by one walk of the token trie from `state`, pruning dead subtrees (what
    /// [`Constraint::mask`] does when no tensorized form exists).
    pub fn trie_mask(&self, state: &A::State) -> TokenSet {
        let mut m = TokenSet::empty(self.vocab.len());
        self.trie.walk(&self.automaton, *state, |t, _| m.insert(t));
        if self.automaton.is_accepting(*state) && (self.vocab.eos() as usize) < self.vocab.len() {
            m.insert(self.vocab.eos());
        }
        m
    }

    /// The budget-aware mask of [`Regular::budget_mask`]; `None` when not tensorized.
    pub fn budget_mask(&self, state: &A::State, remaining: usize) -> Option<TokenSet> {
        Some(self.budget.as_ref()?.budget_mask(state, remaining))
    }

    /// The tensor state index of `state`, when tensorized and reachable at a token boundary.
    pub fn tensor_state(&self, state: &A::State) -> Option<u32> {
        self.budget.as_ref()?.index.get(state).copied()
    }
}

impl RegexConstraint {
    /// Compiles `pattern` over `vocab` with the default [`Limits`].
    pub fn from_regex(pattern: &str, vocab: &Vocabulary) -> Result<Self, RegexError> {
        Self::from_regex_with_limits(pattern, vocab, &Limits::default())
    }

    /// Compiles `pattern` over `vocab` under `limits` (DFA and tensorized sizes).
    pub fn from_regex_with_limits(
        pattern: &str,
        vocab: &Vocabulary,
        limits: &Limits,
    ) -> Result<Self, RegexError> {
        let a = RegexAutomaton::with_limits(pattern, limits)?;
        Ok(Self::new_regular(a, vocab, limits)?)
    }
}

impl<A: ByteAutomaton> Constraint for TokenConstraint<A> {
    type State = A::State;

    fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    fn eos(&self) -> TokenId {
        self.vocab.eos()
    }

    fn initial(&self) -> A::State {
        self.automaton.initial()
    }

    fn advance(&self, state: &A::State, token: TokenId) -> Option<A::State> {
        if token as usize >= self.vocab.len() {
            return None;
        }
        if token == self.vocab.eos() {
            return self.automaton.is_accepting(*state).then_some(*state);
        }
        let bytes = self.vocab.bytes(token);
        if self.vocab.is_special(token) || bytes.is_empty() {
            return None;
        }
        self.automaton.walk(*state, bytes)
    }

    fn is_complete(&self, state: &A::State) -> bool {
        self.automaton.is_accepting(*state)
    }

    /// Reads the precomputed edge rows when tensorized (the state's out-edges), otherwise
    /// walks the trie.
    fn mask(&self, state: &A::State) -> TokenSet {
        match self
            .budget
            .as_ref()
            .and_then(|b| Some((b, *b.index.get(state)?)))
        {
            Some((b, s)) => {
                TokenSet::from_u32_words(&b.tensor.live_mask_words(s), self.vocab.len())
            }
            None => self.trie_mask(state),
        }
    }

    fn regular(&self) -> Option<&dyn Regular<A::State>> {
        self.budget.as_ref().map(|b| b as &dyn Regular<A::State>)
    }
}

impl<S: Copy + Eq + std::hash::Hash> Regular<S> for Budget<S> {
    fn budget_mask(&self, state: &S, remaining: usize) -> TokenSet {
        let n = self.tensor.vocab_size;
        // A state not reached at a token boundary has no tensor index: nothing is known.
        match self.index.get(state) {
            Some(&s) => TokenSet::from_u32_words(&self.tensor.state_mask_words(s, remaining), n),
            None => TokenSet::empty(n),
        }
    }

    fn tensorized(&self) -> Option<&TensorizedAutomaton> {
        Some(&self.tensor)
    }

    fn tensor_state(&self, state: &S) -> Option<u32> {
        self.index.get(state).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocabulary {
        let t: Vec<Vec<u8>> = ["a", "b", "ab", "", "<s>", "</s>", "ba"]
            .iter()
            .map(|w| w.as_bytes().to_vec())
            .collect();
        Vocabulary::new(t, 5, &[4])
    }

    #[test]
    fn masks_and_advance_agree() {
        let c = RegexConstraint::from_regex("(ab)+", &vocab()).unwrap();
        let r = c.regular().expect("a regex constraint is regular");
        let s0 = c.initial();
        assert_eq!(c.mask(&s0).iter().collect::<Vec<_>>(), vec![0, 2]);
        assert!(c.advance(&s0, 3).is_none(), "empty token");
        assert!(c.advance(&s0, 4).is_none(), "special token");
        assert!(c.advance(&s0, 99).is_none(), "out of range");
        assert!(c.advance(&s0, 5).is_none(), "EOS before complete");
        let s = c.advance(&s0, 2).unwrap();
        assert!(c.is_complete(&s));
        assert_eq!(c.mask(&s).iter().collect::<Vec<_>>(), vec![0, 2, 5]);
        assert_eq!(r.budget_mask(&s, 1).iter().collect::<Vec<_>>(), vec![5]);
        assert_eq!(r.budget_mask(&s, usize::MAX), c.mask(&s));
        let plain = TokenConstraint::new(RegexAutomaton::new("a").unwrap(), &vocab());
        assert!(plain.regular().is_none());
    }

    #[test]
    fn regex_errors_pass_through() {
        let e = RegexConstraint::from_regex("a[^\\s\\S]", &vocab()).unwrap_err();
        assert_eq!(e.to_string(), "the constraint matches no string");
        let e = RegexConstraint::from_regex_with_limits(
            "(ab)+",
            &vocab(),
            &Limits::default().with_max_states(2),
        );
        assert!(e.unwrap_err().to_string().contains("max_states = 2"));
    }
}
