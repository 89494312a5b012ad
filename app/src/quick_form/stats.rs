//! The current run's timing (first token, decode rate) and the [`Output`] that streams its
//! tokens into the page's signals.

use crate::clock::now_ms;
use crate::engine::{Output, TokenOut};
use leptos::prelude::*;

/// Timing of the current run, in milliseconds of `performance.now()`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Stats {
    pub(super) started: f64,
    pub(super) first: Option<f64>,
    pub(super) last: f64,
    pub(super) tokens: usize,
    /// Attempts an exact sampler rejected.
    pub(super) rejected: usize,
    /// The exact sampler's latest word that it may not finish soon.
    pub(super) unlikely: Option<Unlikely>,
}

/// An exact run that has gone many attempts without a valid output, as it stood then.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Unlikely {
    /// Attempts rejected in a row (all of the run's so far: it wants one sample).
    pub(super) attempts: usize,
    /// Valid outputs hold at most about this much of the model's mass.
    pub(super) mass_bound: f64,
}

impl Stats {
    pub(super) fn time_to_first_ms(&self) -> Option<f64> {
        self.first.map(|f| f - self.started)
    }
    /// Decode rate: tokens after the first over the time since the first.
    pub(super) fn tokens_per_s(&self) -> Option<f64> {
        let first = self.first?;
        (self.tokens > 1 && self.last > first)
            .then(|| (self.tokens - 1) as f64 * 1000.0 / (self.last - first))
    }
}

/// What the sampler's tokens do to the page.
pub(super) struct PageOutput {
    pub(super) tokens: RwSignal<Vec<(usize, TokenOut)>>,
    pub(super) stats: RwSignal<Stats>,
}

impl Output for PageOutput {
    fn token(&mut self, t: TokenOut) {
        let now = now_ms();
        self.stats.update(|s| {
            s.first.get_or_insert(now);
            s.last = now;
            s.tokens += 1;
        });
        self.tokens.update(|v| {
            let i = v.len();
            v.push((i, t));
        });
    }
    fn rejected(&mut self) {
        self.stats.update(|s| s.rejected += 1);
        self.tokens.set(Vec::new());
    }
    fn unlikely(&mut self, mass_bound: f64) {
        self.stats.update(|s| {
            s.unlikely = Some(Unlikely {
                attempts: s.rejected,
                mass_bound,
            })
        });
    }
}
