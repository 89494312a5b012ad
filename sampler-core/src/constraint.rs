//! The token-level constraint seam every sampler uses.

use crate::{TensorizedAutomaton, TokenId, TokenSet};

/// An incremental constraint over token sequences.
///
/// A token sequence is valid when its bytes are in the language and it ends with EOS; EOS
/// is allowed exactly where the bytes so far are a complete sentence. States are cheap to
/// clone so particles and tries can fork them. The trait is object-safe:
/// [`crate::DynConstraint`] holds any constraint behind one type.
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
    /// What the constraint offers when its language is regular (budget-aware masks, the
    /// tensorized automaton); `None` for a context-free one. Methods that need it
    /// (`gcd-budget`, `p-gcd-smc`) ask here, so a wrapper forwards this one method.
    fn regular(&self) -> Option<&dyn Regular<Self::State>> {
        None
    }
    /// An error met while answering since the last call (cleared by taking it): the answers
    /// given since are unreliable (a refused token, an empty mask), so runs stop with it
    /// rather than return samples biased by it. Constraints that cannot fail keep `None`.
    fn take_error(&self) -> Option<String> {
        None
    }
}

/// The capabilities of a constraint whose language is regular: budget-aware masks from the
/// tensorized automaton (seed 001 §3).
pub trait Regular<S> {
    /// Tokens after which the sequence can still be completed (EOS included) within
    /// `remaining` more tokens counting this one and the EOS.
    fn budget_mask(&self, state: &S, remaining: usize) -> TokenSet;
    /// The tensorized automaton behind the language, when built: what the HMM-guided
    /// proposal (`p-gcd-smc`) multiplies with its HMM.
    fn tensorized(&self) -> Option<&TensorizedAutomaton> {
        None
    }
    /// The state of [`Regular::tensorized`] that `state` stands for; `None` without a
    /// tensorized form or when `state` was not reached at a token boundary.
    fn tensor_state(&self, _state: &S) -> Option<u32> {
        None
    }
}

/// Forwards [`Constraint`] through a pointer to a constraint.
macro_rules! forward_constraint {
    ($($ptr:tt)*) => {
        impl<C: Constraint + ?Sized> Constraint for $($ptr)* {
            type State = C::State;
            fn vocab_size(&self) -> usize {
                (**self).vocab_size()
            }
            fn eos(&self) -> TokenId {
                (**self).eos()
            }
            fn initial(&self) -> C::State {
                (**self).initial()
            }
            fn advance(&self, state: &C::State, token: TokenId) -> Option<C::State> {
                (**self).advance(state, token)
            }
            fn is_complete(&self, state: &C::State) -> bool {
                (**self).is_complete(state)
            }
            fn allows(&self, state: &C::State, token: TokenId) -> bool {
                (**self).allows(state, token)
            }
            fn mask(&self, state: &C::State) -> TokenSet {
                (**self).mask(state)
            }
            fn regular(&self) -> Option<&dyn Regular<C::State>> {
                (**self).regular()
            }
            fn take_error(&self) -> Option<String> {
                (**self).take_error()
            }
        }
    };
}

// A reference, or a box (so a [`crate::DynConstraint`] is one), is the constraint it holds.
forward_constraint!(&C);
forward_constraint!(Box<C>);
