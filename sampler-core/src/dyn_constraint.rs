//! One type for every constraint: what a front end holds when the user picks a regex, a
//! grammar or a schema at run time, so the samplers are compiled once for all of them.

use crate::{Constraint, Regular, TensorizedAutomaton, TokenId, TokenSet};
use std::any::Any;
use std::fmt;

/// Any constraint, its states erased to [`DynState`]; build one with [`into_dyn`].
pub type DynConstraint<'a> = Box<dyn Constraint<State = DynState> + 'a>;

/// Erases `constraint`'s state type, keeping every capability (its [`Constraint::regular`]
/// view included).
pub fn into_dyn<'a, C>(constraint: C) -> DynConstraint<'a>
where
    C: Constraint + 'a,
    C::State: 'static,
{
    Box::new(Erased(constraint))
}

impl fmt::Debug for dyn Constraint<State = DynState> + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynConstraint")
            .field("vocab_size", &self.vocab_size())
            .field("regular", &self.regular().is_some())
            .finish()
    }
}

/// The state of a [`DynConstraint`]: the wrapped constraint's own state, boxed.
pub struct DynState(Box<dyn ErasedState>);

impl DynState {
    /// The concrete state; states are only ever handed back to the constraint that made
    /// them, so a mismatch is a bug in the caller.
    fn get<S: 'static>(&self) -> &S {
        self.0
            .as_ref()
            .as_any()
            .downcast_ref()
            .expect("a DynState is given back to the constraint that made it")
    }
}

impl Clone for DynState {
    fn clone(&self) -> Self {
        // `as_ref` first: `Box<dyn ErasedState>` would otherwise clone the box into a box.
        DynState(self.0.as_ref().clone_box())
    }
}

impl fmt::Debug for DynState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.as_ref().fmt(f)
    }
}

/// A state that can be cloned and downcast behind a `dyn`.
trait ErasedState: Any + fmt::Debug {
    fn clone_box(&self) -> Box<dyn ErasedState>;
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any + Clone + fmt::Debug> ErasedState for T {
    fn clone_box(&self) -> Box<dyn ErasedState> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A constraint whose states are boxed into [`DynState`].
struct Erased<C>(C);

impl<C: Constraint> Constraint for Erased<C>
where
    C::State: 'static,
{
    type State = DynState;
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.0.eos()
    }
    fn initial(&self) -> DynState {
        DynState(Box::new(self.0.initial()))
    }
    fn advance(&self, state: &DynState, token: TokenId) -> Option<DynState> {
        let next = self.0.advance(state.get(), token)?;
        Some(DynState(Box::new(next)))
    }
    fn is_complete(&self, state: &DynState) -> bool {
        self.0.is_complete(state.get())
    }
    fn allows(&self, state: &DynState, token: TokenId) -> bool {
        self.0.allows(state.get(), token)
    }
    fn mask(&self, state: &DynState) -> TokenSet {
        self.0.mask(state.get())
    }
    fn regular(&self) -> Option<&dyn Regular<DynState>> {
        self.0.regular().map(|_| self as &dyn Regular<DynState>)
    }
    fn take_error(&self) -> Option<String> {
        self.0.take_error()
    }
}

impl<C: Constraint> Regular<DynState> for Erased<C>
where
    C::State: 'static,
{
    fn budget_mask(&self, state: &DynState, remaining: usize) -> TokenSet {
        match self.0.regular() {
            Some(r) => r.budget_mask(state.get(), remaining),
            None => TokenSet::empty(self.0.vocab_size()),
        }
    }
    fn tensorized(&self) -> Option<&TensorizedAutomaton> {
        self.0.regular()?.tensorized()
    }
    fn tensor_state(&self, state: &DynState) -> Option<u32> {
        self.0.regular()?.tensor_state(state.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RegexConstraint;
    use crate::toy::{FiniteLanguage, gsk_vocabulary};

    /// The erased constraint answers exactly as the one it wraps, on every prefix of a
    /// walk, and keeps the regular view (budget masks, tensor states) of a regex.
    #[test]
    fn an_erased_constraint_answers_as_the_concrete_one() {
        let c = RegexConstraint::from_regex("1[01]{4}|00000", &gsk_vocabulary()).unwrap();
        let d = into_dyn(c.clone());
        let r = c.regular().expect("a regex is regular");
        let dr = d.regular().expect("the regular view survives erasure");
        assert_eq!(
            dr.tensorized().map(|t| t.num_states),
            r.tensorized().map(|t| t.num_states)
        );
        let (mut s, mut ds) = (c.initial(), d.initial());
        for t in [1, 0, 0, 1, 0] {
            assert_eq!(d.mask(&ds), c.mask(&s));
            assert_eq!(d.is_complete(&ds), c.is_complete(&s));
            assert_eq!(dr.tensor_state(&ds), r.tensor_state(&s));
            for k in 1..4 {
                assert_eq!(dr.budget_mask(&ds, k), r.budget_mask(&s, k));
            }
            // A clone is a state of its own: advancing the original leaves it where it was.
            let (forked, before) = (ds.clone(), d.mask(&ds));
            s = c.advance(&s, t).unwrap();
            ds = d.advance(&ds, t).unwrap();
            assert_eq!(d.mask(&forked), before);
        }
        assert_eq!(format!("{ds:?}"), format!("{s:?}"));
        // A constraint without a regular view stays without one.
        let f = into_dyn(FiniteLanguage::new(gsk_vocabulary(), vec![b"1".to_vec()]));
        assert!(f.regular().is_none());
    }
}
