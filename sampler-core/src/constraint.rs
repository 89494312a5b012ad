//! The token-level constraint seam every sampler uses.

use crate::{TensorizedAutomaton, TokenId, TokenSet};

/// An incremental constraint over token sequences.
///
/// A token sequence is valid when its bytes are in the language and it ends with EOS; EOS
/// is allowed exactly where the bytes so far are a complete sentence. States are cheap to
/// clone so particles and tries can fork them.
pub trait Constraint {
    /// Where the constraint is after a prefix.
    type State: Clone + std::fmt::Debug;
    /// Vocabulary size (EOS included).
    fn vocab_size(&self) -> usize;
    /// The end-of-sequence token.
    fn eos(&self) -> TokenId;
    /// The state before any token.
    fn initial(&self) -> Self::State;
    /// The state after `token`, or `None` when `prefix·token` is not a viable prefix of a
    /// valid sequence. For EOS, `Some` exactly when `state` is complete.
    fn advance(&self, state: &Self::State, token: TokenId) -> Option<Self::State>;
    /// Whether the bytes so far form a sentence of the language (EOS allowed).
    fn is_complete(&self, state: &Self::State) -> bool;
    /// Whether `token` may follow (one lazy check, as AWRS, ARS and CARS use).
    fn allows(&self, state: &Self::State, token: TokenId) -> bool {
        if token == self.eos() {
            self.is_complete(state)
        } else {
            self.advance(state, token).is_some()
        }
    }
    /// Every allowed next token (token masking); EOS included when complete.
    fn mask(&self, state: &Self::State) -> TokenSet {
        let mut m = TokenSet::empty(self.vocab_size());
        for t in 0..self.vocab_size() as TokenId {
            if self.allows(state, t) {
                m.insert(t);
            }
        }
        m
    }
    /// Whether the constraint is regular, so budget-aware masks exist.
    fn is_regular(&self) -> bool {
        false
    }
    /// Tokens after which the sequence can still be completed (EOS included) within
    /// `remaining` more tokens counting this one and the EOS; `None` when unsupported.
    fn budget_mask(&self, _state: &Self::State, _remaining: usize) -> Option<TokenSet> {
        None
    }
    /// The tensorized automaton behind a regular constraint (seed 001 §3.1), when it has
    /// one: what the HMM-guided proposal (`p-gcd-smc`) multiplies with its HMM.
    fn tensorized(&self) -> Option<&TensorizedAutomaton> {
        None
    }
    /// The state of [`Constraint::tensorized`] that `state` stands for; `None` without a
    /// tensorized form or when `state` was not reached at a token boundary.
    fn tensor_state(&self, _state: &Self::State) -> Option<u32> {
        None
    }
    /// An error met while answering since the last call (cleared by taking it): the answers
    /// given since are unreliable (a refused token, an empty mask), so runs stop with it
    /// rather than return samples biased by it. Constraints that cannot fail keep `None`.
    fn take_error(&self) -> Option<String> {
        None
    }
}
