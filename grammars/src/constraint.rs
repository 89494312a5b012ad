//! [`CfgConstraint`]: an llguidance matcher behind sampler-core's [`Constraint`] seam.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use llguidance::Matcher;
use llguidance::api::StopReason;
use sampler_core::{Constraint, TokenId, TokenSet};

use crate::error::{ErrorKind, GrammarError};

/// A context-free (or JSON Schema) constraint run by llguidance's Earley parser.
///
/// Masks are llguidance's masks (every token whose bytes extend a viable prefix), with EOS
/// allowed exactly when the grammar accepts the bytes so far. The [`Constraint`] trait
/// cannot return errors; an llguidance failure while running makes the token disallowed
/// (or the mask empty) and is kept for [`CfgConstraint::take_error`]. The `try_*`
/// methods return it directly.
pub struct CfgConstraint {
    initial: Matcher,
    vocab_size: usize,
    eos: TokenId,
    last_error: Mutex<Option<GrammarError>>,
}

/// The parser after a prefix, shared between clones.
///
/// Cloning is an `Arc` bump. [`Constraint::advance`] copies the matcher (llguidance's
/// `Matcher::clone`: the Earley rows and lexer stack of the prefix, O(prefix) memory, while
/// the grammar, lexer DFA cache and token trie stay shared) and feeds it the token; masks
/// and completeness are computed in place under a lock, so they are cached per state.
#[derive(Clone)]
pub struct CfgState {
    slot: Arc<Mutex<Slot>>,
    tokens: usize,
    finished: bool,
}

struct Slot {
    matcher: Matcher,
    /// The mask came out empty (a prefix no token can continue); llguidance then stops.
    dead: bool,
}

impl fmt::Debug for CfgState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CfgState")
            .field("tokens", &self.tokens)
            .field("finished", &self.finished)
            .finish()
    }
}

/// An llguidance run-time error; exhausted work limits are [`ErrorKind::TooLarge`].
fn engine_error(e: impl fmt::Display) -> GrammarError {
    let message = e.to_string();
    let first = message.lines().next().unwrap_or_default().to_string();
    let over_limit = ["Too many items", "too many states", "too many expressions"]
        .iter()
        .any(|k| first.contains(k));
    let kind = if over_limit {
        ErrorKind::TooLarge
    } else {
        ErrorKind::Engine
    };
    GrammarError::new(kind, format!("llguidance: {first}"))
}

impl CfgState {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Number of tokens consumed so far (EOS included once the sequence is finished).
    pub fn len(&self) -> usize {
        self.tokens
    }
    /// Whether no token has been consumed.
    pub fn is_empty(&self) -> bool {
        self.tokens == 0
    }
}

impl CfgConstraint {
    /// Wraps a freshly created matcher; fails when llguidance reported a compile error.
    pub(crate) fn new(
        matcher: Matcher,
        vocab_size: usize,
        eos: TokenId,
    ) -> Result<Self, GrammarError> {
        if let Some(e) = matcher.get_error() {
            return Err(engine_error(e));
        }
        Ok(CfgConstraint {
            initial: matcher,
            vocab_size,
            eos,
            last_error: Mutex::new(None),
        })
    }

    /// The last llguidance error met through the [`Constraint`] methods, if any (cleared).
    pub fn take_error(&self) -> Option<GrammarError> {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    fn record<T>(&self, r: Result<T, GrammarError>, fallback: T) -> T {
        r.unwrap_or_else(|e| {
            *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            fallback
        })
    }

    /// [`Constraint::advance`] with llguidance errors returned.
    pub fn try_advance(
        &self,
        state: &CfgState,
        token: TokenId,
    ) -> Result<Option<CfgState>, GrammarError> {
        if state.finished || token as usize >= self.vocab_size {
            return Ok(None);
        }
        if token == self.eos {
            return Ok(self.try_is_complete(state)?.then(|| CfgState {
                slot: state.slot.clone(),
                tokens: state.tokens + 1,
                finished: true,
            }));
        }
        let mut matcher = {
            let slot = state.lock();
            if slot.dead || slot.matcher.is_stopped() {
                return Ok(None);
            }
            slot.matcher.clone()
        };
        let n = matcher.try_consume_tokens(&[token]).map_err(engine_error)?;
        Ok((n == 1).then(|| CfgState {
            slot: Arc::new(Mutex::new(Slot {
                matcher,
                dead: false,
            })),
            tokens: state.tokens + 1,
            finished: false,
        }))
    }

    /// [`Constraint::allows`] with llguidance errors returned (no matcher copy).
    pub fn try_allows(&self, state: &CfgState, token: TokenId) -> Result<bool, GrammarError> {
        if token == self.eos {
            return self.try_is_complete(state);
        }
        if state.finished || token as usize >= self.vocab_size {
            return Ok(false);
        }
        let mut slot = state.lock();
        if slot.dead || slot.matcher.is_stopped() {
            return Ok(false);
        }
        let n = slot
            .matcher
            .validate_tokens(&[token])
            .map_err(engine_error)?;
        Ok(n == 1)
    }

    /// [`Constraint::is_complete`] with llguidance errors returned.
    pub fn try_is_complete(&self, state: &CfgState) -> Result<bool, GrammarError> {
        if state.finished {
            return Ok(false);
        }
        let mut slot = state.lock();
        if slot.dead {
            return Ok(false);
        }
        slot.matcher.is_accepting().map_err(engine_error)
    }

    /// [`Constraint::mask`] with llguidance errors returned.
    pub fn try_mask(&self, state: &CfgState) -> Result<TokenSet, GrammarError> {
        let mut out = TokenSet::empty(self.vocab_size);
        if state.finished {
            return Ok(out);
        }
        let mut slot = state.lock();
        if slot.dead {
            return Ok(out);
        }
        if slot.matcher.is_stopped() {
            if slot.matcher.is_accepting().map_err(engine_error)? {
                out.insert(self.eos);
            }
            return Ok(out);
        }
        match slot.matcher.compute_mask() {
            Ok(vob) => {
                let words = vob.as_slice();
                let n = self.vocab_size.div_ceil(32).min(words.len());
                let mut set = TokenSet::from_u32_words(&words[..n], self.vocab_size);
                // Clear any bits past the vocabulary in the last word.
                for t in self.vocab_size..n * 32 {
                    set.remove(t as TokenId);
                }
                Ok(set)
            }
            Err(e)
                if e.to_string()
                    .starts_with(&StopReason::NoExtensionBias.to_string()) =>
            {
                slot.dead = true;
                Ok(out)
            }
            Err(e) => Err(engine_error(e)),
        }
    }
}

impl fmt::Debug for CfgConstraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CfgConstraint")
            .field("vocab_size", &self.vocab_size)
            .field("eos", &self.eos)
            .finish()
    }
}

impl Constraint for CfgConstraint {
    type State = CfgState;
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }
    fn eos(&self) -> TokenId {
        self.eos
    }
    fn initial(&self) -> CfgState {
        CfgState {
            slot: Arc::new(Mutex::new(Slot {
                matcher: self.initial.clone(),
                dead: false,
            })),
            tokens: 0,
            finished: false,
        }
    }
    fn advance(&self, state: &CfgState, token: TokenId) -> Option<CfgState> {
        self.record(self.try_advance(state, token), None)
    }
    fn is_complete(&self, state: &CfgState) -> bool {
        self.record(self.try_is_complete(state), false)
    }
    fn allows(&self, state: &CfgState, token: TokenId) -> bool {
        self.record(self.try_allows(state, token), false)
    }
    fn mask(&self, state: &CfgState) -> TokenSet {
        self.record(self.try_mask(state), TokenSet::empty(self.vocab_size))
    }
    /// The inherent [`CfgConstraint::take_error`], as text.
    fn take_error(&self) -> Option<String> {
        CfgConstraint::take_error(self).map(|e| e.to_string())
    }
}
