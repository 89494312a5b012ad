//! Turns `--regex`, `--grammar` or `--json-schema` into a constraint over the vocabulary.

use crate::args::ConstraintArgs;
use crate::failure::{Result, fail};
use sampler_core::{Constraint, Vocabulary};

/// Code that runs with a constraint of any concrete type (the trait has an associated
/// state type, so it is not object-safe; this visitor keeps the samplers monomorphic).
pub trait ConstraintUser {
    /// Runs with `constraint`.
    fn run<C: Constraint>(self, constraint: &C) -> Result<()>;
}

/// A built constraint of one of the supported kinds.
pub enum Built {}

impl Built {
    /// Hands the concrete constraint to `user`.
    pub fn dispatch(&self, _user: impl ConstraintUser) -> Result<()> {
        match *self {}
    }
}

/// Builds the constraint the arguments name, over `vocab`.
pub fn build(args: &ConstraintArgs, _format: Option<&str>, _vocab: &Vocabulary) -> Result<Built> {
    let _ = args;
    fail("constraints are being wired in")
}
