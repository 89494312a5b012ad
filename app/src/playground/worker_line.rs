//! The line that says where the playground's real-model runs sample — in the pool of
//! sampling workers or on the page's thread — which workers are busy, and what the
//! workers' messages cost the page.
//!
//! Hooks: `#pg-worker[data-state]` (`off`, `loading`, `ready`, `failed`) with
//! `data-workers` (ready workers), `data-planned`, `data-busy`, `data-helped` (sequences
//! the workers computed for each other's runs), `data-messages`,
//! `data-tokens`, `data-mean-latency-ms` (worker post → page handler) and
//! `data-mean-apply-ms` (the page's time to decode and apply one batch), `data-refreshes`
//! (how many times the line has read the pool: a test waits for more of them rather than
//! for a fixed time), `data-warmed` (prefills the idle workers have finished, for the next
//! lesson step), `data-replaced` (workers replaced after a crash), `data-split` (chunks of
//! a busy worker's products idle workers computed for it, or `off` where the page is not
//! cross-origin isolated) with `data-split-offers` (products shared),
//! `data-split-batch-offers` (of those, products of a batch of several sequences) and
//! `data-split-waited-us` (microseconds the drivers waited for those chunks),
//! `data-shares` (0 where each worker holds a whole copy of the model, else the shares it
//! is split into by rows); one `.pool-worker[data-state]` (`loading`, `idle`, `busy`,
//! `failed`) per worker.

use crate::worker::client::{self, Member, Overhead, Pool, WorkerState};
use leptos::prelude::*;

/// Polled four times a second: the workers load after the page, and their jobs and
/// counters move during runs.
#[component]
pub fn WorkerLine() -> impl IntoView {
    let snapshot = || (client::state(), client::overhead(), client::pool());
    let now = RwSignal::new(snapshot());
    let refreshes = RwSignal::new(0u64);
    if let Ok(handle) = set_interval_with_handle(
        move || {
            let fresh = snapshot();
            if now.with_untracked(|n| *n != fresh) {
                now.set(fresh);
            }
            refreshes.update(|r| *r += 1);
        },
        std::time::Duration::from_millis(250),
    ) {
        on_cleanup(move || handle.clear());
    }
    move || {
        let (state, o, pool) = now.get();
        let ready = pool
            .members
            .iter()
            .filter(|m| matches!(m, Member::Idle | Member::Busy(_)))
            .count();
        let busy = pool
            .members
            .iter()
            .filter(|m| matches!(m, Member::Busy(_)))
            .count();
        let helped: u64 = pool.helped.iter().sum();
        let dots = pool
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let helped = pool.helped.get(i).copied().unwrap_or(0);
                let mut title = match m {
                    Member::Loading => format!("worker {}: loading the model", i + 1),
                    Member::Idle if pool.shares > 0 && i > 0 => format!(
                        "worker {}: holds {} of every matrix's rows and computes them for \
                         worker 1's runs (worker 1 takes over the ones it comes to late)",
                        i + 1,
                        share_name(pool.shares)
                    ),
                    Member::Idle => format!("worker {}: idle", i + 1),
                    Member::Busy(n) => format!(
                        "worker {}: busy ({n} job{})",
                        i + 1,
                        if *n == 1 { "" } else { "s" }
                    ),
                    Member::Failed => format!("worker {}: failed", i + 1),
                };
                if helped > 0 {
                    title.push_str(&format!(
                        "; computed {helped} sequences for other workers' runs"
                    ));
                }
                view! { <span class="pool-worker" data-state=m.name() title=title></span> }
            })
            .collect_view();
        view! {
            <div id="pg-worker" class="muted stat" data-state=state.name()
                data-workers=ready.to_string() data-planned=pool.planned.to_string()
                data-busy=busy.to_string()
                data-helped=helped.to_string() data-warmed=pool.warmed.to_string()
                data-replaced=pool.replaced.0.to_string()
                data-split=pool.split.map_or("off".to_string(), |c| c.chunks.to_string())
                data-split-offers=pool.split.map_or(0, |c| c.offers).to_string()
                data-split-waited-us=pool.split.map_or(0, |c| c.waited_us).to_string()
                data-split-batch-offers=pool.split.map_or(0, |c| c.batch_offers).to_string()
                data-shares=pool.shares.to_string()
                data-messages=o.messages.to_string() data-tokens=o.tokens.to_string()
                data-mean-latency-ms=format!("{:.3}", o.mean_latency_ms())
                data-mean-apply-ms=format!("{:.3}", o.mean_apply_ms())
                data-refreshes=move || refreshes.get().to_string()>
                <span class="pool">{dots}</span>
                {describe(&state, &o, &pool, ready, busy)}
            </div>
        }
    }
}

fn describe(state: &WorkerState, o: &Overhead, pool: &Pool, ready: usize, busy: usize) -> String {
    match state {
        WorkerState::Off(why) => format!("Real-model runs sample on the page's thread: {why}."),
        WorkerState::Loading => format!(
            "Loading the model into the first of {} sampling worker{} ({})…",
            pool.planned,
            if pool.planned == 1 { "" } else { "s" },
            pool.why
        ),
        WorkerState::Ready { ms } => {
            let mut s = if pool.shares > 0 {
                format!(
                    "Real-model runs sample in a pool of {} Web Workers ({}) that split the \
                     model by rows: the first holds it whole and runs the jobs, one after \
                     another ({}); {} (loaded in {:.1} s) and compute{} them for each \
                     matrix product, and the first takes over any rows a busy one has not \
                     started. ?pool=copies gives each \
                     worker a whole copy instead (the memory of one copy for each), which \
                     runs compare mode's samplers side by side.",
                    pool.shares,
                    pool.why,
                    if busy > 0 { "busy" } else { "idle" },
                    match pool.shares {
                        2 => "the second holds a half of every matrix's rows".to_string(),
                        n => format!(
                            "the other {} hold {} of every matrix's rows each",
                            n - 1,
                            share_name(n)
                        ),
                    },
                    ms / 1000.0,
                    if pool.shares == 2 { "s" } else { "" },
                )
            } else if pool.planned <= 1 {
                format!(
                    "Real-model runs sample in a Web Worker ({}) with its own copy of the model \
                     (loaded in {:.1} s); ?workers=N starts a pool of N.",
                    pool.why,
                    ms / 1000.0
                )
            } else {
                format!(
                    "Real-model runs sample in a pool of {ready} of {} Web Workers ({}), each \
                     with its own copy of the model (the first loaded in {:.1} s): {busy} busy, \
                     {} idle. Compare mode's samplers and the exact P^L run side by side; {} \
                     (?pool=shares splits the model by rows between them instead).",
                    pool.planned,
                    pool.why,
                    ms / 1000.0,
                    ready - busy,
                    match pool.split {
                        Some(_) =>
                            "a run's matrix products (one sequence's, or up to 8 of SMC's \
                             particles') are shared with idle workers row by row, larger \
                             batches sequence by sequence",
                        None =>
                            "a run's batched model calls (SMC's particles) are shared with idle \
                             workers sequence by sequence (a single sequence's products are \
                             shared only where the page is cross-origin isolated)",
                    },
                )
            };
            if pool.replaced.0 > 0 {
                s.push_str(&format!(
                    " {} worker{} stopped and {} replaced (last: {}).",
                    pool.replaced.0,
                    if pool.replaced.0 == 1 { "" } else { "s" },
                    if pool.replaced.0 == 1 { "was" } else { "were" },
                    pool.replaced.1
                ));
            }
            if o.messages > 0 {
                s.push_str(&format!(
                    " {} messages ({} tokens): {:.2} ms from a worker's post to the page's \
                     handler and {:.2} ms of the page's time each, on average.",
                    o.messages,
                    o.tokens,
                    o.mean_latency_ms(),
                    o.mean_apply_ms()
                ));
            }
            s
        }
        WorkerState::Failed(why) => {
            format!("The sampling workers failed ({why}); runs sample on the page's thread.")
        }
    }
}

/// "a half", "a third", "a quarter", "a fifth"… of the rows.
fn share_name(shares: usize) -> String {
    match shares {
        2 => "a half".into(),
        3 => "a third".into(),
        4 => "a quarter".into(),
        n => format!("1/{n}"),
    }
}
