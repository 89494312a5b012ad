//! The run: Run / Step / Stop with their shortcuts, the speed slider, copy-link and the
//! JSONL downloads, the progress of a run and of an exact enumeration, the status line,
//! the grammar's compile line, and (folded) the sampling workers.

use crate::playground::form::Form;
use crate::playground::frames::{SPEED_STEPS, speed_label};
use crate::playground::link;
use crate::playground::session::Session;
use leptos::prelude::*;

/// The rows of the run.
#[component]
pub fn RunRows(
    form: Form,
    session: Session,
    compare_mode: RwSignal<bool>,
    speed_pos: RwSignal<u32>,
    on_run: Callback<()>,
    on_step: Callback<()>,
    on_stop: Callback<()>,
) -> impl IntoView {
    let link_text = RwSignal::new(String::new());
    let busy = move || matches!(session.status.get(), "running");
    view! {
        <div class="row buttons">
            <button id="pg-run" on:click=move |_| on_run.run(()) disabled=busy>
                {move || if session.status.get() == "paused" { "Play" } else { "Run" }}
            </button>
            <span class="shortcut"><kbd>"Ctrl"</kbd>"/"<kbd>"⌘"</kbd>" + "<kbd>"Enter"</kbd></span>
            <button id="pg-step" class="secondary" on:click=move |_| on_step.run(())>"Step"</button>
            <button id="pg-stop" class="secondary" on:click=move |_| on_stop.run(())
                disabled=move || !matches!(session.status.get(), "running" | "paused")>"Stop"</button>
            <span class="shortcut"><kbd>"Esc"</kbd></span>
            <label class="speed">"speed "
                <input id="pg-speed" type="range" min="0" max=SPEED_STEPS.to_string()
                    prop:value=move || speed_pos.get().to_string()
                    on:input=move |e| speed_pos.set(event_target_value(&e).parse().unwrap_or(SPEED_STEPS))/>
                " " <span id="pg-speed-label" class="muted">{move || speed_label(speed_pos.get())}</span>
            </label>
        </div>
        <div class="row">
            <button id="pg-copy-link" class="secondary" on:click=move |_| {
                if let Ok(s) = form.state() {
                    link_text.set(link::copy_link(&link::with_mode(s, compare_mode.get_untracked())));
                }
            }>"Copy link"</button>
            <input id="pg-link" type="text" readonly class="link-text" prop:value=move || link_text.get()
                class:hidden=move || link_text.get().is_empty()/>
            // The same link as a QR code, for phones in the room.
            <div id="pg-link-qr" class="qr" hidden=move || link_text.get().is_empty()
                inner_html=move || {
                    let l = link_text.get();
                    if l.is_empty() { String::new() } else { link::qr_markup(&l, 160) }
                }></div>
            <button id="pg-export-samples" class="secondary" on:click=move |_| link::export_samples(session)>"Samples as JSONL"</button>
            <button id="pg-export-events" class="secondary" on:click=move |_| link::export_events(session)>"Events as JSONL"</button>
        </div>
        <Show when=move || session.stats.with(|s| s.recorded > 0)>
            <div class="row">
                <label class="stat">"shown / recorded events "
                    <progress id="pg-progress"
                        max=move || session.stats.with(|s| s.recorded.max(1).to_string())
                        value=move || session.stats.with(|s| s.shown.to_string())></progress>
                </label>
                <span class="stat">{move || session.stats.with(|s| format!(
                    "{} / {} · {} LM calls", s.shown, s.recorded, s.lm_calls))}</span>
            </div>
        </Show>
        {move || session.exact_progress.get().map(|(n, cap)| view! {
            <div class="row">
                <label class="stat">"exact P^L: model calls "
                    <progress id="pg-exact-progress" data-lm-calls=n.to_string()
                        max=cap.to_string() value=n.to_string()></progress>
                </label>
                <span class="stat">{format!("{n} (at most {cap}; one per prefix) · Esc stops")}</span>
            </div>
        })}
        <div id="pg-status" data-state=move || session.status.get()
            data-run=move || session.runs.get().to_string()
            data-items=move || session.stats.get().shown.to_string()
            data-first-token-ms=move || session.stats.get().first_token_ms.map(|m| format!("{m:.1}")).unwrap_or_default()
            class=move || if session.status.get() == "error" { "error" } else { "muted" }>
            {move || session.message.get()}
            {move || {
                let s = session.stats.get();
                (s.shown > 0).then(|| format!(
                    " {} events shown{}",
                    s.shown,
                    s.first_token_ms.map(|m| format!(" · first token {m:.0} ms after Run")).unwrap_or_default()
                ))
            }}
        </div>
        {move || session.compile_info.get().map(|c| view! {
            <div id="pg-compile-info" class="muted stat">{c}</div>
        })}
        <crate::disclosure::Disclosure id="workers" summary="Sampling workers: where real-model runs compute, and what their messages cost">
            <crate::playground::worker_line::WorkerLine />
        </crate::disclosure::Disclosure>
    }
}
