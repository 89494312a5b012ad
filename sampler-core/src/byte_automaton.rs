//! The byte-level seam under every constraint (as llguidance's toktrie uses).

/// A deterministic automaton over bytes whose dead states are pruned.
///
/// `step` returns `None` when no accepting state is reachable any more, so a `Some` state
/// is always the prefix of some sentence of the language. Token-level lifting
/// ([`crate::TokenConstraint`]) and tensorization ([`crate::TensorizedAutomaton`]) are
/// written once, generic over this trait.
pub trait ByteAutomaton {
    /// A small, cheap-to-copy state id.
    type State: Copy + Eq + std::hash::Hash + std::fmt::Debug;
    /// The state before any byte.
    fn initial(&self) -> Self::State;
    /// The state after `byte`, or `None` when the automaton is dead there.
    fn step(&self, state: Self::State, byte: u8) -> Option<Self::State>;
    /// Whether the bytes read so far form a sentence of the language.
    fn is_accepting(&self, state: Self::State) -> bool;
    /// The state after every byte of `bytes`, or `None` when it dies on the way.
    fn walk(&self, state: Self::State, bytes: &[u8]) -> Option<Self::State> {
        bytes.iter().try_fold(state, |s, &b| self.step(s, b))
    }
}
