//! The pool under loom: every interleaving (up to a preemption bound) of a caller and one
//! worker — the job hand-off, a worker asleep between jobs and woken by the next, a task
//! that panics, and the pool's drop, which every model ends with (loom fails a model whose
//! threads do not all finish). What is checked is safety: every task runs once, its
//! effects are seen by the caller when `run` returns, nothing deadlocks, the workers stop.
//! That a sleeping worker is woken soon enough to help is speed, not safety (the caller
//! finishes a job alone if need be), and is measured, not model-checked. Run with `cargo xtask test loom`, that is
//! `RUSTFLAGS="--cfg loom" cargo test -p task-pool --release --test loom`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering};
use std::panic::{AssertUnwindSafe, catch_unwind};
use task_pool::Pool;

/// Explores `f` with at most `bound` preemptions per execution.
fn model(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.max_branches = 100_000;
    b.check(f);
}

/// Runs a job of `n` tasks and checks each ran exactly once, as the caller sees it when
/// `run` returns (the counters are relaxed: only the pool's own ordering makes them seen).
fn job(pool: &Pool, n: usize) {
    let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
    pool.run(n, &|i| {
        hits[i].fetch_add(1, Ordering::Relaxed);
    });
    for (i, h) in hits.iter().enumerate() {
        assert_eq!(h.load(Ordering::Relaxed), 1, "task {i} of {n}");
    }
}

#[test]
fn a_job_hands_its_tasks_to_a_worker_and_returns_after_all() {
    model(3, || {
        let pool = Pool::new(2).unwrap();
        job(&pool, 2);
    });
}

#[test]
fn a_worker_asleep_between_jobs_is_woken_or_left_asleep_safely() {
    model(2, || {
        let pool = Pool::new(2).unwrap();
        job(&pool, 2);
        job(&pool, 3);
    });
}

#[test]
fn a_panicking_task_reaches_the_caller_and_the_next_job_runs() {
    model(2, || {
        let pool = Pool::new(2).unwrap();
        let ran = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            pool.run(2, &|i| {
                ran.fetch_add(1, Ordering::Relaxed);
                if i == 1 {
                    panic!("task 1");
                }
            })
        }));
        let payload = r.expect_err("the panic reaches the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"task 1"));
        assert_eq!(ran.load(Ordering::Relaxed), 2, "the other task still ran");
        job(&pool, 2);
    });
}
