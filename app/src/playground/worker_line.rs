//! The line that says where the playground's real-model runs sample — in the sampling
//! worker or on the page's thread — and what the worker's messages cost the page.
//!
//! Hook: `#pg-worker[data-state]` (`off`, `loading`, `ready`, `failed`) with
//! `data-messages`, `data-tokens`, `data-mean-latency-ms` (worker post → page handler) and
//! `data-mean-apply-ms` (the page's time to decode and apply one batch).

use crate::worker::client::{self, Overhead, WorkerState};
use leptos::prelude::*;

/// Polled four times a second: the worker loads after the page, and its counters move
/// during runs.
#[component]
pub fn WorkerLine() -> impl IntoView {
    let now = RwSignal::new((client::state(), client::overhead()));
    if let Ok(handle) = set_interval_with_handle(
        move || {
            let fresh = (client::state(), client::overhead());
            if now.with_untracked(|n| *n != fresh) {
                now.set(fresh);
            }
        },
        std::time::Duration::from_millis(250),
    ) {
        on_cleanup(move || handle.clear());
    }
    move || {
        let (state, o) = now.get();
        view! {
            <div id="pg-worker" class="muted stat" data-state=state.name()
                data-messages=o.messages.to_string() data-tokens=o.tokens.to_string()
                data-mean-latency-ms=format!("{:.3}", o.mean_latency_ms())
                data-mean-apply-ms=format!("{:.3}", o.mean_apply_ms())>
                {describe(&state, &o)}
            </div>
        }
    }
}

fn describe(state: &WorkerState, o: &Overhead) -> String {
    match state {
        WorkerState::Off(why) => format!("Real-model runs sample on the page's thread: {why}."),
        WorkerState::Loading => "Loading the model into the sampling worker…".into(),
        WorkerState::Ready { ms } => {
            let mut s = format!(
                "Real-model runs sample in a Web Worker (its copy of the model loaded in {:.1} s).",
                ms / 1000.0
            );
            if o.messages > 0 {
                s.push_str(&format!(
                    " {} messages ({} tokens): {:.2} ms from the worker's post to the page's \
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
            format!("The sampling worker failed ({why}); runs sample on the page's thread.")
        }
    }
}
