//! The forward pass's worker threads (native only): a job is `n` numbered tasks; the
//! caller and the workers claim them one at a time until none is left, and the caller
//! returns once all are done.
//!
//! A token's ~200 matrix products come a few microseconds apart, so a worker that went to
//! sleep after each would be woken ~200 times a token, tens of microseconds each on a
//! many-core machine. Here a worker spins for [`SPIN`] after a job (yielding its core now
//! and then, should another thread want it), where the next job reaches it within about a
//! microsecond, and only then sleeps on a condition variable until a job wakes it.
//! Measured on a 16-core Xeon (`docs/bench/h100.md`): decode 1.49× the rayon pool this
//! replaced at 16 threads, 1.47× at 8, the same at 2 (the 2-core machine here: 0.99×).
//!
//! One caller at a time: a job asked for while another runs (from another thread, or
//! from inside a task) runs on its caller alone.
//!
//! The one `unsafe` here erases the lifetime of a job's closure so that the workers can
//! reach it through the shared state (`Pool::job`, `work`). Built with
//! `RUSTFLAGS="--cfg loom"`, the atomics, locks and threads are loom's and
//! `tests/loom.rs` model-checks the job hand-off, the wake-up of sleeping workers, a
//! panicking task and the pool's drop over every interleaving (`cargo xtask test loom`).
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! let pool = task_pool::Pool::new(2).unwrap();
//! let sum = AtomicUsize::new(0);
//! pool.run(100, &|i| { sum.fetch_add(i, Ordering::Relaxed); });
//! assert_eq!(sum.load(Ordering::Relaxed), 4950);
//! ```

#![deny(missing_docs)]

mod sync;

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::time::Duration;
use sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use sync::{Arc, Condvar, Mutex, Spin};

/// How long an idle worker spins before it sleeps, unless `STRAIT_POOL_SPIN_US` says
/// otherwise (microseconds; for measuring the pool, e.g. 0 to sleep at once).
const SPIN: Duration = Duration::from_micros(200);

/// [`SPIN`], or `STRAIT_POOL_SPIN_US` when set to a number.
fn spin() -> Duration {
    std::env::var("STRAIT_POOL_SPIN_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(SPIN, Duration::from_micros)
}
/// Tasks per job at most: the count and the next index share the claim word (16 bits each).
const MAX_TASKS: usize = 0xffff;
/// Stack of each worker.
const STACK: usize = 4 << 20;

/// The caller and `threads - 1` workers.
pub struct Pool {
    shared: Arc<Shared>,
    threads: usize,
    /// Held by the caller of the running job.
    caller: Mutex<()>,
    /// How long the caller spins for the last tasks before it yields ([`spin`]).
    spin: Duration,
}

/// A job's tasks, on its caller's stack while it runs.
struct Job {
    /// `f(i)` runs task `i`; the lifetime is the caller's (see [`Pool::run`]).
    f: *const (dyn Fn(usize) + Sync + 'static),
}

/// What the caller and the workers share.
struct Shared {
    /// epoch (32 bits) · task count (16) · next task to claim (16), changed together so
    /// that a claim is always of the job the claimer read.
    claim: AtomicU64,
    /// The current job; dereferenced only by whoever claimed one of its tasks.
    job: AtomicPtr<Job>,
    /// Tasks of the current job finished.
    done: AtomicUsize,
    /// The first panic of the current job's tasks, raised again by its caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Set when the pool is dropped: the workers return.
    quit: AtomicBool,
    /// Workers asleep (or about to be) on `wake`.
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

fn epoch(word: u64) -> u64 {
    word >> 32
}

fn count(word: u64) -> usize {
    ((word >> 16) & 0xffff) as usize
}

fn next(word: u64) -> usize {
    (word & 0xffff) as usize
}

impl Pool {
    /// A pool of `threads` (at least 1: the caller); `Err` when a worker cannot start.
    pub fn new(threads: usize) -> Result<Pool, String> {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            claim: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
            quit: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        });
        // Built first, so that workers started before a failed start are stopped (Drop).
        let pool = Pool {
            shared,
            threads,
            caller: Mutex::new(()),
            spin: spin(),
        };
        for i in 1..threads {
            let s = pool.shared.clone();
            let spin = pool.spin;
            sync::thread::Builder::new()
                .name(format!("strait-forward-{i}"))
                .stack_size(STACK)
                .spawn(move || worker(&s, spin))
                .map_err(|e| format!("cannot start {threads} threads for the forward pass: {e}"))?;
        }
        Ok(pool)
    }

    /// Threads a job runs on, the caller's included.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `f(0)`, …, `f(n - 1)`, each once, on the caller and the workers; returns when
    /// all have returned. A panic in a task is raised again here, after the others finish.
    pub fn run(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        let guard = match self.caller.try_lock() {
            _ if self.threads == 1 || n < 2 => None,
            Ok(g) => Some(g),
            // A panic in `job` itself unwound through the lock: the pool is sound.
            #[cfg(not(loom))]
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            // Another job runs (or, under loom, anything else).
            Err(_) => None,
        };
        let Some(guard) = guard else {
            (0..n).for_each(f);
            return;
        };
        let mut panic = None;
        for from in (0..n).step_by(MAX_TASKS) {
            let len = (n - from).min(MAX_TASKS);
            let part = |i: usize| f(from + i);
            panic = self.job(len, &part);
            if panic.is_some() {
                break;
            }
        }
        // The next caller may go on while this one unwinds.
        drop(guard);
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }

    /// One job of at most [`MAX_TASKS`] tasks; the first panic of its tasks, if any.
    fn job(&self, n: usize, f: &(dyn Fn(usize) + Sync)) -> Option<Box<dyn Any + Send>> {
        let s = &*self.shared;
        // SAFETY: only the lifetime is erased. The pointer is dereferenced by whoever
        // claims a task of this job, and this function returns only after every task has
        // finished; no task can be claimed after that (all n are taken, and the next job
        // has a new epoch).
        let f: *const (dyn Fn(usize) + Sync + 'static) = unsafe { std::mem::transmute(f) };
        let job = Job { f };
        s.job
            .store(&job as *const Job as *mut Job, Ordering::Release);
        s.done.store(0, Ordering::Relaxed);
        let e = (epoch(s.claim.load(Ordering::Relaxed)) + 1) & 0xffff_ffff;
        let word = (e << 32) | ((n as u64) << 16);
        // SeqCst, with the load of `sleepers` below and the worker's pair in `worker`:
        // either the worker sees this epoch, or this sees the worker asleep and wakes it.
        s.claim.store(word, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = s.lock.lock().unwrap_or_else(|p| p.into_inner());
            s.wake.notify_all();
        }
        work(s, e);
        // The last tasks are running on workers: spin, then yield (a worker may be off its
        // core on a busy machine).
        let spin = Spin::new(self.spin);
        while s.done.load(Ordering::Acquire) < n {
            spin.pause();
        }
        // Every task has finished: the panic of one can be raised by the caller.
        s.panic.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl Drop for Pool {
    /// Stops the workers (those spinning see a new epoch; those asleep are woken).
    fn drop(&mut self) {
        let s = &*self.shared;
        s.quit.store(true, Ordering::SeqCst);
        let e = (epoch(s.claim.load(Ordering::Relaxed)) + 1) & 0xffff_ffff;
        s.claim.store(e << 32, Ordering::SeqCst);
        let _g = s.lock.lock().unwrap_or_else(|p| p.into_inner());
        s.wake.notify_all();
    }
}

/// Claims and runs tasks of epoch `e` until there are none left (or a later job began).
fn work(s: &Shared, e: u64) {
    loop {
        let word = s.claim.load(Ordering::Acquire);
        if epoch(word) != e || next(word) >= count(word) {
            return;
        }
        if s.claim
            .compare_exchange(word, word + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        // SAFETY: the claim of task `next(word)` of epoch `e` succeeded, so that task is
        // unfinished and the job's caller waits in `Pool::job` for it: the job lives.
        let job = unsafe { &*s.job.load(Ordering::Acquire) };
        let f = unsafe { &*job.f };
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(next(word)))) {
            // Kept, not dropped here: dropping a payload may itself panic, and nothing
            // may unwind out of this loop before `done` counts the task.
            let mut first = s.panic.lock().unwrap_or_else(|p| p.into_inner());
            if first.is_none() {
                *first = Some(p);
            } else {
                std::mem::forget(p);
            }
        }
        s.done.fetch_add(1, Ordering::Release);
    }
}

/// A worker: waits for each new epoch (spinning for `spin`, then asleep) and works on it,
/// until the pool is dropped.
fn worker(s: &Shared, spin: Duration) {
    // Not an epoch (those have 32 bits): a worker that starts late still looks at the
    // current job, and at `quit`, once.
    let mut seen = u64::MAX;
    loop {
        let mut idle = Spin::new(spin);
        let e = loop {
            let e = epoch(s.claim.load(Ordering::Acquire));
            if e != seen {
                break e;
            }
            if idle.keep_spinning() {
                continue;
            }
            let g = s.lock.lock().unwrap_or_else(|p| p.into_inner());
            s.sleepers.fetch_add(1, Ordering::SeqCst);
            let quit = s.quit.load(Ordering::SeqCst);
            let idle = epoch(s.claim.load(Ordering::SeqCst)) == seen && !quit;
            let g = if idle {
                s.wake.wait(g).unwrap_or_else(|p| p.into_inner())
            } else {
                g
            };
            s.sleepers.fetch_sub(1, Ordering::SeqCst);
            drop(g);
            // Dropped: return now, not once the drop's new epoch shows (until then this
            // loop would spin without sleeping; loom found it).
            if quit || s.quit.load(Ordering::SeqCst) {
                return;
            }
            let e = epoch(s.claim.load(Ordering::Acquire));
            if e != seen {
                break e;
            }
        };
        if s.quit.load(Ordering::SeqCst) {
            return;
        }
        seen = e;
        work(s, e);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;
    use std::time::Instant;

    #[test]
    fn every_task_runs_once_on_every_pool_size() {
        for threads in [1, 2, 3, 8] {
            let pool = Pool::new(threads).unwrap();
            for n in [0, 1, 2, 7, 64, 1000] {
                for _ in 0..20 {
                    let hits: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
                    pool.run(n, &|i| {
                        hits[i].fetch_add(1, Ordering::Relaxed);
                    });
                    assert!(
                        hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                        "{threads} threads, {n} tasks"
                    );
                }
            }
        }
    }

    #[test]
    fn jobs_longer_than_the_claim_word_are_split() {
        let pool = Pool::new(2).unwrap();
        let n = MAX_TASKS * 2 + 5;
        let hits: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        pool.run(n, &|i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn workers_that_slept_wake_for_the_next_job() {
        let pool = Pool::new(3).unwrap();
        let seen = Mutex::new(std::collections::HashSet::new());
        std::thread::sleep(SPIN * 20);
        // Tasks slow enough that the sleeping workers must take some of them.
        pool.run(12, &|_| {
            std::thread::sleep(Duration::from_millis(20));
            seen.lock().unwrap().insert(std::thread::current().id());
        });
        assert!(
            seen.lock().unwrap().len() > 1,
            "only the caller ran the tasks"
        );
    }

    #[test]
    fn a_nested_or_concurrent_job_runs_on_its_caller() {
        let pool = Arc::new(Pool::new(4).unwrap());
        let total = AtomicU32::new(0);
        pool.run(8, &|_| {
            pool.run(8, &|_| {
                total.fetch_add(1, Ordering::Relaxed);
            });
        });
        assert_eq!(total.load(Ordering::Relaxed), 64);
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let p = pool.clone();
                std::thread::spawn(move || {
                    let sum = AtomicU32::new(0);
                    for _ in 0..200 {
                        p.run(16, &|i| {
                            sum.fetch_add(i as u32, Ordering::Relaxed);
                        });
                    }
                    sum.load(Ordering::Relaxed)
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 200 * 120);
        }
    }

    #[test]
    fn dropping_the_pool_stops_its_workers() {
        let pool = Pool::new(4).unwrap();
        let weak = Arc::downgrade(&pool.shared);
        pool.run(8, &|_| ());
        drop(pool);
        // Each worker holds the shared state until it returns.
        let start = Instant::now();
        while weak.strong_count() > 0 {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "workers still running"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_panicking_task_is_reported_to_the_caller_and_the_pool_goes_on() {
        let pool = Pool::new(3).unwrap();
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(32, &|i| {
                if i == 17 {
                    panic!("task 17");
                }
            })
        }));
        let payload = r.expect_err("the panic reaches the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"task 17"));
        let hits = AtomicU32::new(0);
        pool.run(32, &|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 32);
    }
}
