//! The max-tokens cut. Every exact sampler's target is P restricted to the valid token
//! sequences of at most `max_tokens` tokens, EOS included: a valid sequence that needs more
//! is outside the target, as if it were not in the language. [`within`] is the one place
//! every sampler asks whether a length is inside the cut.

/// Whether a sequence of `len` tokens (EOS included) is within the cut `max_tokens`.
pub fn within(len: usize, max_tokens: usize) -> bool {
    #[cfg(any(test, feature = "mutants"))]
    if OFF_BY_ONE.with(|m| m.get()) {
        return len < max_tokens;
    }
    len <= max_tokens
}

#[cfg(any(test, feature = "mutants"))]
thread_local! {
    /// Test-only mutant switch: the cut one token too strict.
    static OFF_BY_ONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Test-only mutant: runs `f` (on this thread) with the cut one token too strict, so the
/// exactness tests can show that they catch an off-by-one in the length check.
#[cfg(any(test, feature = "mutants"))]
pub fn with_off_by_one_cut<R>(f: impl FnOnce() -> R) -> R {
    OFF_BY_ONE.with(|m| m.set(true));
    let r = f();
    OFF_BY_ONE.with(|m| m.set(false));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_includes_max_tokens_and_the_mutant_does_not() {
        assert!(within(3, 3) && !within(4, 3));
        assert!(with_off_by_one_cut(|| !within(3, 3) && within(2, 3)));
        assert!(within(3, 3), "the mutant switch is off again");
    }
}
