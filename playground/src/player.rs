//! Replay of a run's recorded events into the views: at a speed, or one at a time.

use crate::runner::Run;

/// Replays a run's events into views at a chosen speed, or one at a time.
#[derive(Clone, Debug)]
pub struct Player {
    cursor: usize,
    /// Events per second; `f64::INFINITY` shows everything at once.
    pub speed: f64,
    carry: f64,
}

impl Default for Player {
    fn default() -> Self {
        Player {
            cursor: 0,
            speed: 60.0,
            carry: 0.0,
        }
    }
}

impl Player {
    /// A player at the start, replaying `speed` events per second.
    pub fn new(speed: f64) -> Self {
        Player {
            speed,
            ..Player::default()
        }
    }

    /// How many events have been shown.
    pub fn position(&self) -> usize {
        self.cursor
    }

    /// Back to the start (the caller resets its views).
    pub fn rewind(&mut self) {
        self.cursor = 0;
        self.carry = 0.0;
    }

    /// Shows the next event (Step); `false` when there is none yet.
    pub fn step(&mut self, run: &Run, views: &mut crate::views::Views) -> bool {
        match run.event(self.cursor) {
            Some(e) => {
                views.apply_recorded(&e);
                self.cursor += 1;
                true
            }
            None => false,
        }
    }

    /// Advances by `dt_seconds` of animation: shows `speed · dt` events (fractions carry
    /// over to the next frame). Returns how many were shown.
    pub fn tick(&mut self, run: &Run, views: &mut crate::views::Views, dt_seconds: f64) -> usize {
        let available = run.len().saturating_sub(self.cursor);
        let want = if self.speed.is_infinite() {
            available
        } else {
            self.carry += (self.speed * dt_seconds.max(0.0)).max(0.0);
            let w = self.carry.floor().min(available as f64);
            self.carry -= w;
            if w as usize == available {
                // Do not bank time while waiting for events.
                self.carry = self.carry.min(1.0);
            }
            w as usize
        };
        for e in run.events_range(self.cursor, want) {
            views.apply_recorded(&e);
        }
        self.cursor += want;
        want
    }

    /// Shows every recorded event now.
    pub fn to_end(&mut self, run: &Run, views: &mut crate::views::Views) -> usize {
        const CHUNK: usize = 4096;
        let start = self.cursor;
        loop {
            let events = run.events_range(self.cursor, CHUNK);
            for e in &events {
                views.apply_recorded(e);
            }
            self.cursor += events.len();
            if events.len() < CHUNK {
                return self.cursor - start;
            }
        }
    }
}
