//! The playground: pick an example or write a grammar, choose a model (a toy one runs
//! instantly; SmolLM2 once downloaded) and a sampler, and watch the sampler's event
//! stream drive the views — token, trie, ASAp, MCMC, SMC, results — or compare two to
//! four samplers with an equal budget of model calls against the exact distribution.
//!
//! Everything DOM-free (state, permalinks, examples, toy models, view models, the exact
//! distribution, the runner, JSONL) lives in the `playground` crate; this module only
//! lays it out and wires it to the browser.
//!
//! # Files
//! - [`form`]: the controls' signals ↔ `PlaygroundState`.
//! - [`controls`]: the form, the buttons, the speed slider, the example menu.
//! - [`editor`]: the grammar editor with error marking.
//! - [`session`], [`frames`], [`world`], [`yielding`]: one run, paced per animation frame.
//! - [`link`]: the URL hash (permalinks, example deep links), copy and export.
//! - one file per view: [`token_view`], [`trie_view`], [`mcmc_view`], [`smc_view`],
//!   [`results_view`], and [`compare`] for compare mode.

mod chart;
mod compare;
mod controls;
mod editor;
mod form;
mod frames;
mod link;
mod mcmc_view;
mod results_view;
mod session;
mod smc_view;
mod token_view;
mod trie_view;
mod worker_line;
mod world;
mod yielding;

use form::Form;
use leptos::ev;
use leptos::prelude::*;
use session::Session;

/// Which of the sampler-specific views a method drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// ARS, RSFT, CARS (p_u) and ASAp (c̃).
    Trie,
    /// The MCMC samplers.
    Mcmc,
    /// The SMC samplers.
    Smc,
    /// Token-level samplers: the token and results views only.
    Plain,
}

fn family(method: &str) -> Family {
    use sampler_core::samplers::Method;
    match method.parse::<Method>() {
        Ok(Method::Ars | Method::Rsft | Method::Cars | Method::Asap) => Family::Trie,
        Ok(m) if m.is_mcmc() => Family::Mcmc,
        Ok(m) if m.is_smc() => Family::Smc,
        _ => Family::Plain,
    }
}

/// The playground section.
#[component]
pub fn Playground() -> impl IntoView {
    let start = link::initial_state();
    let form = Form::new(&start.state);
    let link_message = RwSignal::new(start.message);
    let session = Session::new();
    let compare = compare::Compare::new();
    let speed_pos = RwSignal::new(frames::SPEED_STEPS - 3);
    Effect::new(move |_| session.set_speed(frames::speed_at(speed_pos.get())));
    let compare_mode = RwSignal::new(!start.state.compare.is_empty());
    // Another link pasted into the address bar while the page is open.
    let hash_listener = window_event_listener(ev::hashchange, move |_| {
        let s = link::initial_state();
        if let Some(m) = &s.message {
            link_message.set(Some(m.clone()));
        }
        if s.state != form.state().unwrap_or_default() {
            compare_mode.set(!s.state.compare.is_empty());
            form.set(&s.state);
        }
    });
    on_cleanup(move || hash_listener.remove());

    let read_state = move || match form.state() {
        Ok(s) => Some(link::with_mode(s, compare_mode.get_untracked())),
        Err(e) => {
            session.status.set("error");
            session.message.set(e);
            None
        }
    };
    let run = move || {
        if session.status.get_untracked() == "paused" {
            session.resume();
            return;
        }
        let Some(state) = read_state() else { return };
        link_message.set(None);
        link::write_hash(&state);
        if compare_mode.get_untracked() {
            compare.start(&state, session);
        } else {
            session.start(state, false);
        }
    };
    let step = move || {
        compare_mode.set(false);
        session.step(read_state);
    };
    let stop = move || {
        session.stop();
        compare.stop();
    };

    let keys = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if e.key() == "Enter"
            && (e.ctrl_key() || e.meta_key())
            && !crate::quick_form::focus_in_generate_controls()
        {
            e.prevent_default();
            run();
        } else if e.key() == "Escape" {
            stop();
        }
    });
    on_cleanup(move || keys.remove());

    view! {
        <section id="playground" class="playground">
            <h2>"Playground"</h2>
            {move || link_message.get().map(|m| view! {
                <div id="pg-link-message" class="error" role="alert">{m}</div>
            })}
            // Wide screens: the setup on the left, the live views on the right; narrow ones
            // stack them (style.css, `.pg-body`).
            <div class="pg-body">
            <div class="pg-side">
            <controls::Controls form=form session=session compare_mode=compare_mode
                speed_pos=speed_pos on_run=Callback::new(move |_| run())
                on_step=Callback::new(move |_| step()) on_stop=Callback::new(move |_| stop())/>
            </div>
            <div class="pg-main">
            <Show when=move || !compare_mode.get()
                fallback=move || view! { <compare::CompareView compare=compare session=session/> }>
                <div class="views" data-method=move || session.method.get()>
                    <token_view::TokenPanel session=session/>
                    <Show when=move || family(&session.method.get()) == Family::Trie>
                        <trie_view::TriePanel session=session
                            asap=Signal::derive(move || session.method.get() == "asap")/>
                    </Show>
                    <Show when=move || family(&session.method.get()) == Family::Mcmc>
                        <mcmc_view::McmcPanel session=session/>
                    </Show>
                    <Show when=move || family(&session.method.get()) == Family::Smc>
                        <smc_view::SmcPanel session=session
                            threshold=Signal::derive(move || form.ess.get().trim().parse::<f64>().unwrap_or(0.5))/>
                    </Show>
                    <results_view::ResultsPanel session=session/>
                </div>
            </Show>
            </div>
            </div>
        </section>
    }
}
