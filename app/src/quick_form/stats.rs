//! The current run's timing (first token, decode rate) and the [`Output`] that streams its
//! tokens into the page's signals.

use crate::clock::now_ms;
use crate::engine::{Output, TokenOut};
use leptos::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;

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

/// The least time between two paints of the streamed tokens, in milliseconds. Tokens that
/// come faster are shown together: at 30 tokens a second each would otherwise cost the page
/// a layout and a paint (measured at about 13 ms of CPU each in headless Chromium on two
/// cores, time the sampling workers lose; `docs/bench/page.md`).
pub(super) const PAINT_MS: f64 = 100.0;

/// What the sampler's tokens do to the page: shown in the browser's next task (with any that
/// came in the same message), then at most every [`PAINT_MS`] (the timing counts each
/// token when it came).
#[derive(Clone)]
pub(super) struct PageOutput {
    pub(super) tokens: RwSignal<Vec<(usize, TokenOut)>>,
    pub(super) stats: RwSignal<Stats>,
    pending: Rc<RefCell<Pending>>,
}

/// Tokens that came and are not shown yet.
#[derive(Default)]
struct Pending {
    tokens: Vec<TokenOut>,
    /// When the first of them came (the run's first token if none were shown before).
    first: Option<f64>,
    /// When the last of them came.
    last: f64,
    /// When tokens were last shown.
    shown_at: Option<f64>,
    /// Whether a paint is scheduled.
    scheduled: bool,
}

impl PageOutput {
    /// An output into `tokens` and `stats`, nothing pending.
    pub(super) fn new(tokens: RwSignal<Vec<(usize, TokenOut)>>, stats: RwSignal<Stats>) -> Self {
        PageOutput {
            tokens,
            stats,
            pending: Rc::default(),
        }
    }

    /// Shows every token that came (the run's end calls it, and anything that must come
    /// after them).
    pub(super) fn flush(&self) {
        let (tokens, first, last) = {
            let mut p = self.pending.borrow_mut();
            p.scheduled = false;
            if p.tokens.is_empty() {
                return;
            }
            p.shown_at = Some(now_ms());
            (std::mem::take(&mut p.tokens), p.first.take(), p.last)
        };
        let n = tokens.len();
        self.stats.update(|s| {
            if let Some(f) = first {
                s.first.get_or_insert(f);
            }
            s.last = last;
            s.tokens += n;
        });
        self.tokens.update(|v| {
            for t in tokens {
                let i = v.len();
                v.push((i, t));
            }
        });
    }
}

impl Output for PageOutput {
    fn token(&mut self, t: TokenOut) {
        let now = now_ms();
        let wait = {
            let mut p = self.pending.borrow_mut();
            p.first.get_or_insert(now);
            p.last = now;
            p.tokens.push(t);
            if p.scheduled {
                return;
            }
            p.scheduled = true;
            // At once (after the tokens that came with this one) if none were shown for
            // PAINT_MS, else when that has passed.
            p.shown_at.map_or(0.0, |at| (at + PAINT_MS - now).max(0.0))
        };
        let out = self.clone();
        set_timeout(
            move || out.flush(),
            std::time::Duration::from_micros((wait * 1000.0) as u64),
        );
    }
    fn rejected(&mut self) {
        self.flush();
        self.stats.update(|s| s.rejected += 1);
        self.tokens.set(Vec::new());
    }
    fn unlikely(&mut self, mass_bound: f64) {
        self.flush();
        self.stats.update(|s| {
            s.unlikely = Some(Unlikely {
                attempts: s.rejected,
                mass_bound,
            })
        });
    }
}
