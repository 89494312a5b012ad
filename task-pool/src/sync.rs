//! The pool's atomics, locks and threads — std's, or loom's under `--cfg loom` — and how a
//! thread waits by spinning ([`Spin`]), which under loom does not spin at all: a waiter
//! yields (the caller) or goes to sleep at once (a worker), so the model explores the
//! hand-offs rather than the spin loops.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, atomic};
#[cfg(loom)]
pub(crate) use loom::thread;
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, atomic};
#[cfg(not(loom))]
pub(crate) use std::thread;

use std::time::Duration;

/// A wait by spinning for at most a time budget.
pub(crate) struct Spin {
    #[cfg(not(loom))]
    start: std::time::Instant,
    #[cfg(not(loom))]
    budget: Duration,
    #[cfg(not(loom))]
    spins: u32,
}

impl Spin {
    /// A wait that spins for at most `budget`.
    #[cfg_attr(loom, allow(unused_variables))]
    pub(crate) fn new(budget: Duration) -> Spin {
        Spin {
            #[cfg(not(loom))]
            start: std::time::Instant::now(),
            #[cfg(not(loom))]
            budget,
            #[cfg(not(loom))]
            spins: 0,
        }
    }

    /// One pause of a waiter that does not sleep (a job's caller waiting for its last
    /// tasks): a spin hint while the budget lasts, then a yield of the core.
    pub(crate) fn pause(&self) {
        #[cfg(not(loom))]
        if self.start.elapsed() < self.budget {
            std::hint::spin_loop();
            return;
        }
        thread::yield_now();
    }

    /// One round of an idle worker: `true` to look for a job again (a spin hint, and every
    /// 64th round a yield, should another thread want the core), `false` once the budget is
    /// spent and it should sleep.
    pub(crate) fn keep_spinning(&mut self) -> bool {
        #[cfg(not(loom))]
        {
            self.spins = self.spins.wrapping_add(1);
            if !self.spins.is_multiple_of(64) {
                std::hint::spin_loop();
                return true;
            }
            if self.start.elapsed() < self.budget {
                thread::yield_now();
                return true;
            }
        }
        false
    }
}
