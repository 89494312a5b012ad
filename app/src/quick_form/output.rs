//! The quick form's output: the streamed tokens (each with p and, under masking, Z), the
//! run's status line, its timing, and the finished text with whether it matches.

use super::advice::Advice;
use super::stats::Stats;
use crate::engine::{Finished, Request, TokenOut};
use crate::page_state::reload_with_backend;
use leptos::prelude::*;

/// What a run shows.
#[derive(Clone, Copy)]
pub(super) struct Shown {
    pub(super) tokens: RwSignal<Vec<(usize, TokenOut)>>,
    pub(super) stats: RwSignal<Stats>,
    /// `idle`, `running`, `done`, `stopped` or `error` (`#run-status[data-state]`).
    pub(super) run_state: RwSignal<&'static str>,
    /// Generate presses (tests wait for it to change).
    pub(super) runs: RwSignal<u32>,
    pub(super) run_msg: RwSignal<String>,
    pub(super) result: RwSignal<Option<Finished>>,
    /// The run's request (the advice's link hands it to the playground).
    pub(super) request: RwSignal<Option<Request>>,
}

/// The output section and the legend under it; `backend_info` says whether a failed run on
/// WebGPU may offer the CPU instead; `on_stop` stops the run (the advice's link does).
#[component]
pub(super) fn QuickOutput(
    shown: Shown,
    backend_info: RwSignal<(String, bool)>,
    on_stop: Callback<()>,
) -> impl IntoView {
    let Shown {
        tokens,
        stats,
        run_state,
        runs,
        run_msg,
        result,
        request,
    } = shown;
    view! {
        <section class="output-section">
            <div id="output" class="output" aria-live="polite">
                <For
                    each=move || tokens.get()
                    key=|(i, _)| *i
                    children=|(_, t)| view! { <TokenView t=t/> }
                />
            </div>
            <div id="run-status" data-state=move || run_state.get() data-run=move || runs.get().to_string()
                class=move || if run_state.get() == "error" { "error" } else { "muted" }>
                {move || run_msg.get()}
                <Show when=move || run_state.get() == "error" && backend_info.get().1 && run_msg.get().contains("WebGPU")>
                    " "
                    <button id="reload-cpu" on:click=move |_| reload_with_backend("cpu")>"Reload on CPU (wasm)"</button>
                </Show>
            </div>
            <div id="stats" class="muted" data-rejected=move || stats.get().rejected.to_string()>
                {move || {
                    let s = stats.get();
                    if s.tokens == 0 {
                        return String::new();
                    }
                    // Under CARS the tokens of every attempt, the rejected ones too.
                    let mut out = match s.rejected {
                        0 => format!("{} tokens", s.tokens),
                        r => format!("{} tokens in {} attempts", s.tokens, r + 1),
                    };
                    if let Some(ms) = s.time_to_first_ms() {
                        out.push_str(&format!(" · first token after {ms:.0} ms"));
                    }
                    if let Some(r) = s.tokens_per_s() {
                        out.push_str(&format!(" · {r:.1} tokens/s"));
                    }
                    match s.rejected {
                        0 => {}
                        1 => out.push_str(" · 1 attempt rejected"),
                        n => out.push_str(&format!(" · {n} attempts rejected")),
                    }
                    out
                }}
            </div>
            <Advice stats=stats request=request on_stop=on_stop/>
            <Show when=move || result.get().is_some()>
                {move || result.get().map(|f| view! {
                    <div class="result">
                        <span class="muted">"Output: "</span>
                        <pre id="result-text" data-valid=f.valid.to_string()>{f.text.clone()}</pre>
                        <span id="result-valid" class=if f.valid { "ok" } else { "muted" }>
                            {if f.valid { "matches the regex (and ended with EOS)" } else { "does not match the regex" }}
                        </span>
                    </div>
                })}
            </Show>
        </section>
        <footer class="muted">
            "p: probability of the token under the model; Z: the probability mass the regex mask kept at that step (lcd), \
             or that CARS had not yet ruled out there (cars). \
             lcd forces every step into the regex and so changes which outputs the model prefers; \
             cars (exact) draws from the model itself and rejects what leaves the regex, so its output \
             is distributed as the model's own outputs that match."
        </footer>
    }
}

/// One streamed token with its probability (and the mask's kept mass Z).
#[component]
fn TokenView(t: TokenOut) -> impl IntoView {
    let shown = if t.eos {
        "⟨eos⟩".to_string()
    } else {
        t.text.clone()
    };
    let title = match t.z {
        Some(z) => format!("token {} · p = {:.4} · Z = {:.4}", t.id, t.p, z),
        None => format!("token {} · p = {:.4}", t.id, t.p),
    };
    let label = match t.z {
        Some(z) => format!("{:.2} Z{:.2}", t.p, z),
        None => format!("{:.2}", t.p),
    };
    view! {
        <span class="tok" class:eos=t.eos title=title data-p=t.p.to_string()
            data-z=t.z.map(|z| z.to_string())>
            <span class="tok-text">{shown}</span>
            <span class="tok-p">{label}</span>
        </span>
    }
}
