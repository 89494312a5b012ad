//! `strait enumerate`: exact P^L of a finite language.

use crate::args::EnumerateArgs;
use crate::failure::{Result, fail};

/// Prints every token sequence of the language with its probabilities.
pub fn run(_args: &EnumerateArgs) -> Result<()> {
    fail("enumerate is being wired in")
}
