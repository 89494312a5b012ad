//! A constraint that starts failing after some calls, for the tests of error paths.

use super::FiniteLanguage;
use crate::{Constraint, TokenId, TokenSet};
use std::cell::{Cell, RefCell};

/// A finite language (G_sk's in the tests), failing from its `fail_at`-th call on: each
/// call after that answers "not allowed" (or an empty mask) and leaves an error, as
/// llguidance does over a work limit.
pub struct Failing {
    inner: FiniteLanguage,
    calls: Cell<usize>,
    fail_at: usize,
    error: RefCell<Option<String>>,
}

impl Failing {
    /// `inner`, failing from its `fail_at`-th call (counting from 1) on.
    pub fn new(inner: FiniteLanguage, fail_at: usize) -> Self {
        Failing {
            inner,
            calls: Cell::new(0),
            fail_at,
            error: RefCell::new(None),
        }
    }
    fn ok(&self) -> bool {
        self.calls.set(self.calls.get() + 1);
        if self.calls.get() < self.fail_at {
            return true;
        }
        *self.error.borrow_mut() = Some(format!("failed at call {}", self.fail_at));
        false
    }
    /// Whether it has failed (and so left an error).
    pub fn failed(&self) -> bool {
        self.calls.get() >= self.fail_at
    }
}

impl Constraint for Failing {
    type State = Vec<u8>;
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.inner.eos()
    }
    fn initial(&self) -> Vec<u8> {
        self.inner.initial()
    }
    fn advance(&self, s: &Vec<u8>, t: TokenId) -> Option<Vec<u8>> {
        self.ok().then(|| self.inner.advance(s, t)).flatten()
    }
    fn is_complete(&self, s: &Vec<u8>) -> bool {
        self.ok() && self.inner.is_complete(s)
    }
    fn allows(&self, s: &Vec<u8>, t: TokenId) -> bool {
        self.ok() && self.inner.allows(s, t)
    }
    fn mask(&self, s: &Vec<u8>) -> TokenSet {
        match self.ok() {
            true => self.inner.mask(s),
            false => TokenSet::empty(self.vocab_size()),
        }
    }
    fn take_error(&self) -> Option<String> {
        self.error.borrow_mut().take()
    }
}
