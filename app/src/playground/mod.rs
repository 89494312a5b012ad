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
//! - [`controls`]: the form, the buttons, the speed slider, the example menu (one file
//!   each for what is sampled, how, and the run).
//! - [`editor`]: the grammar editor with error marking.
//! - [`session`], [`frames`], [`world`]: one run, paced per animation frame (the model
//!   behind `crate::engine::Yielding`).
//! - [`link`]: the URL hash (permalinks, example and lesson links), copy and export.
//! - [`lesson_bar`]: the lesson list and the open lesson's bar (Back / Next, arrow keys).
//! - [`snapshot`]: each view as an SVG or PNG file.
//! - one file per view: [`token_view`], [`trie_view`], [`mcmc_view`], [`smc_view`],
//!   [`results_view`], and [`compare`] for compare mode.

pub(crate) mod chart;
mod compare;
mod controls;
mod editor;
mod form;
mod frames;
mod lesson_bar;
mod link;
mod mcmc_view;
mod results_view;
mod session;
mod smc_view;
mod snapshot;
mod token_view;
mod trie_view;
mod worker_line;
mod world;

use crate::loader::{DownloadProgress, Phase};
use crate::page_state::Modes;
use form::Form;
use leptos::ev;
use leptos::prelude::*;
use playground::lessons::{Look, Place};
use playground::state::PlaygroundState;
use session::Session;

/// A run another part of the page asks the playground to open and start (provided by the
/// page; the playground takes the state and clears the request).
#[derive(Clone, Copy)]
pub struct RunRequest(pub RwSignal<Option<PlaygroundState>>);

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
        // `auto` starts as CARS (and may hand over to SMC: its views show both).
        Ok(Method::Ars | Method::Rsft | Method::Cars | Method::Asap | Method::Auto) => Family::Trie,
        Ok(m) if m.is_mcmc() => Family::Mcmc,
        Ok(m) if m.is_smc() => Family::Smc,
        _ => Family::Plain,
    }
}

/// Brings what a link opened into view: the playground's top (the folded lesson list, the
/// lesson's words if any, then the stage) at the window's top, and the keyboard's focus on
/// the stage.
fn land() {
    let doc = document();
    if let Some(el) = doc.get_element_by_id("playground") {
        el.scroll_into_view();
    }
    if let Some(stage) = doc
        .query_selector(".stage")
        .ok()
        .flatten()
        .and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(e).ok())
    {
        // Without scrolling again: a lesson's words above the stage stay in view.
        let options = web_sys::FocusOptions::new();
        options.set_prevent_scroll(true);
        let _ = stage.focus_with_options(&options);
    }
}

/// Whether the setup stacks above the stage (narrower than style.css's two-column layout).
fn narrow() -> bool {
    window()
        .match_media("(min-width: 76rem)")
        .ok()
        .flatten()
        .is_some_and(|m| !m.matches())
}

/// How long a real-model prompt stays unchanged in the form before the idle workers
/// prefill it (long enough that typing does not start one prefill per key), and how
/// often it is tried again while the pool is busy (a prefill of the form's last prompt).
const PREFILL_SETTLE: std::time::Duration = std::time::Duration::from_millis(600);
const PREFILL_TRIES: u32 = 20;

/// What a prefill depends on: the prompt, the chat template's use, the model.
type PromptKey = (String, bool, Option<String>);

/// The form's [`PromptKey`] (tracked by the caller's effect where `tracked`).
fn prompt_key(form: Form, tracked: bool) -> PromptKey {
    if tracked {
        (form.prompt.get(), form.chat.get(), form.model_url.get())
    } else {
        (
            form.prompt.get_untracked(),
            form.chat.get_untracked(),
            form.model_url.get_untracked(),
        )
    }
}

/// After [`PREFILL_SETTLE`], conditions the idle workers on the form's prompt if it is
/// still `key` and was not prefilled already; while a run is under way (or waits for the
/// model) or the pool is busy, it tries again, `tries` times at most.
fn prefill_when_idle(
    form: Form,
    session: Session,
    waiting: StoredValue<Option<PlaygroundState>>,
    prefilled: StoredValue<Option<PromptKey>>,
    key: PromptKey,
    tries: u32,
) {
    set_timeout(
        move || {
            if prompt_key(form, false) != key
                || prefilled.with_value(|p| p.as_ref() == Some(&key))
                || crate::page_state::engine().is_none()
            {
                return;
            }
            let Ok(state) = form.state() else { return };
            let running = session.active() || waiting.with_value(Option::is_some);
            if !running && crate::worker::client::warm_if_idle(&state) {
                prefilled.set_value(Some(key));
            } else if tries > 1 {
                prefill_when_idle(form, session, waiting, prefilled, key, tries - 1);
            }
        },
        PREFILL_SETTLE,
    );
}

/// The first real-model step after `place` in the lessons' order, within the next two steps.
fn next_real_step(place: Place) -> Option<Place> {
    let next = place.next()?;
    if next.step().real_model() {
        return Some(next);
    }
    next.next().filter(|n| n.step().real_model())
}

/// The playground section: the lesson list and the open lesson's bar, the controls, and
/// the stage (the running views). The page's [`Modes`] (presentation, embedded) and the
/// model's [`Phase`] come from the page's context.
#[component]
pub fn Playground() -> impl IntoView {
    let modes = use_context::<Modes>().expect("the page provides its modes");
    let phase = use_context::<RwSignal<Phase>>().expect("the page provides the model's phase");
    let download = use_context::<DownloadProgress>();
    let show_qr = RwSignal::new(false);
    let start = link::initial_state();
    let form = Form::new(&start.state);
    let link_message = RwSignal::new(start.message);
    let session = Session::new();
    let compare = compare::Compare::new();
    let speed_pos = RwSignal::new(frames::SPEED_STEPS - 3);
    Effect::new(move |_| session.set_speed(frames::speed_at(speed_pos.get())));
    let compare_mode = RwSignal::new(!start.state.compare.is_empty());
    let lesson = RwSignal::new(start.lesson);
    // A real-model lesson step opened before the model has loaded: it starts once it has.
    let waiting = StoredValue::new(None::<PlaygroundState>);

    // The prompt the pool was last conditioned on from this form (prefilled, or run).
    let prefilled = StoredValue::new(None::<PromptKey>);
    let start_state = move |state: PlaygroundState| {
        // A real-model run conditions its worker on the form's prompt: nothing to prefill
        // after it.
        if state.model.toy().is_none() {
            prefilled.set_value(Some(prompt_key(form, false)));
        }
        if compare_mode.get_untracked() {
            compare.start(&state, session);
        } else {
            session.start(state, false);
        }
    };
    // Puts `state` in the form and starts it, or queues it until the model has loaded.
    let run_now = move |state: PlaygroundState| {
        session.stop();
        compare.stop();
        compare_mode.set(!state.compare.is_empty());
        form.set(&state);
        link_message.set(None);
        if state.model.toy().is_none() && crate::page_state::engine().is_none() {
            waiting.set_value(Some(state));
            session.status.set("waiting");
            session
                .message
                .set("The model is still loading: this run starts as soon as it is ready.".into());
            return;
        }
        waiting.set_value(None);
        start_state(state);
    };
    // A run asked for elsewhere on the page (a figure of the papers' tables): it lands in
    // view with its link in the address bar, and starts.
    if let Some(RunRequest(request)) = use_context::<RunRequest>() {
        Effect::new(move |_| {
            if let Some(state) = request.get() {
                request.update_untracked(|r| *r = None);
                lesson.set(None);
                link::write_hash(&state);
                if let Some(el) = document().get_element_by_id("playground") {
                    el.scroll_into_view();
                }
                run_now(state);
            }
        });
    }
    // Opens a lesson step: its preset in the form, its run started (or queued until the
    // model has loaded).
    let open_step = move |place: Place| {
        lesson.set(Some(place));
        let state = place.step().state();
        // The pace of the step's view: a single draw slowly enough to follow, many
        // samples all at once.
        speed_pos.set(match place.step().look {
            Look::Token => 4,
            Look::Mcmc => 5,
            Look::Trie | Look::Smc => 6,
            Look::Results | Look::Compare => frames::SPEED_STEPS,
        });
        run_now(state);
    };
    let go = move |place: Place| {
        link::write_lesson_hash(place);
        open_step(place);
    };
    Effect::new(move |_| {
        if matches!(phase.get(), Phase::Ready)
            && crate::page_state::engine().is_some()
            && let Some(state) = waiting.try_update_value(|w| w.take()).flatten()
        {
            start_state(state);
        }
    });
    // While the reader reads a lesson step whose run has ended (or waits for the model),
    // the next real-model step's prompt is prefilled in the idle sampling workers.
    Effect::new(move |_| {
        let ended = matches!(session.status.get(), "done" | "stopped");
        if let (true, Some(place), Phase::Ready) = (ended, lesson.get(), phase.get())
            && let Some(next) = next_real_step(place)
        {
            crate::worker::client::warm(&next.step().state());
        }
    });
    // A real-model prompt that settles in the form while nothing runs (an example just
    // chosen, a prompt written or pasted): the idle sampling workers prefill it, so the
    // Run that follows starts from the prompt's cached keys and values.
    Effect::new(move |_| {
        let key = prompt_key(form, true);
        // Also when a run ends: a prompt edited during it is prefilled then.
        let _ = session.status.get();
        if form.model.get() == "real"
            && matches!(phase.get(), Phase::Ready)
            && lesson.get_untracked().is_none()
        {
            prefill_when_idle(form, session, waiting, prefilled, key, PREFILL_TRIES);
        }
    });
    if let Some(place) = start.lesson {
        // After the first render, so the views exist when the run starts.
        request_animation_frame(move || {
            open_step(place);
            request_animation_frame(land);
        });
    } else if start.linked {
        // A shared experiment or an example: shown and run with its seed, as one click on
        // Run would (the real model's once it has loaded).
        let state = start.state.clone();
        request_animation_frame(move || {
            run_now(state);
            request_animation_frame(land);
        });
    }
    // Another link pasted into the address bar while the page is open.
    let hash_listener = window_event_listener(ev::hashchange, move |_| {
        let s = link::initial_state();
        if let Some(m) = &s.message {
            link_message.set(Some(m.clone()));
        }
        if let Some(place) = s.lesson {
            open_step(place);
            land();
        } else if s.state != form.state().unwrap_or_default() {
            lesson.set(None);
            if s.linked {
                run_now(s.state);
                land();
            } else {
                compare_mode.set(!s.state.compare.is_empty());
                form.set(&s.state);
            }
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
        waiting.set_value(None);
        // A lesson step run again as it is keeps its lesson link.
        match lesson.get_untracked() {
            Some(p) if p.step().state() == state => link::write_lesson_hash(p),
            _ => link::write_hash(&state),
        }
        start_state(state);
    };
    let step = move || {
        compare_mode.set(false);
        session.step(read_state);
    };
    let stop = move || {
        waiting.set_value(None);
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
        } else if let Some(p) = lesson.get_untracked()
            && !e.ctrl_key()
            && !e.meta_key()
            && !e.alt_key()
            && !lesson_bar::in_text_field(&e)
        {
            let to = match e.key().as_str() {
                "ArrowRight" | "PageDown" => p.next(),
                "ArrowLeft" | "PageUp" => p.back(),
                _ => return,
            };
            if let Some(to) = to {
                e.prevent_default();
                go(to);
            }
        }
    });
    on_cleanup(move || keys.remove());
    let look = move || lesson.get().map(|p| p.step().look.name());
    let busy = move || matches!(session.status.get(), "running");

    view! {
        <section id="playground" class="playground">
            <Show when=move || !modes.embed>
                <lesson_bar::LessonList place=lesson/>
            </Show>
            <lesson_bar::LessonBar place=lesson on_go=Callback::new(go)
                on_close=Callback::new(move |_| lesson.set(None))/>
            {move || link_message.get().map(|m| view! {
                <div id="pg-link-message" class="error" role="alert">{m}</div>
            })}
            // Wide screens: the setup on the left, the live views on the right; narrow ones
            // stack them (style.css, `.pg-body`). Presentation and embedded modes fold the
            // setup away and keep the stage.
            <div class="pg-body">
            // A link opened on a phone folds the setup, so the stage is on the first screen.
            <details class="pg-side" open=!(modes.embed || (modes.landed && narrow()))>
                <summary>"Playground: model, grammar, sampler"</summary>
                <div class="pg-controls controls">
                    <controls::SetupRows form=form session=session compare_mode=compare_mode/>
                    <controls::SamplerRows form=form compare_mode=compare_mode/>
                    <controls::RunRows form=form session=session compare_mode=compare_mode
                        speed_pos=speed_pos on_run=Callback::new(move |_| run())
                        on_step=Callback::new(move |_| step()) on_stop=Callback::new(move |_| stop())/>
                </div>
            </details>
            // Presentation mode, on request: this step's link as a QR code in a corner.
            <Show when=move || modes.present.get() && show_qr.get()>
                <div id="present-qr" class="present-qr" role="img"
                    aria-label="QR code of this step's link"
                    inner_html=move || {
                        // Redrawn when the step or the run changes (the address changes then).
                        lesson.track();
                        session.status.track();
                        link::qr_markup(&link::share_url(), 220)
                    }></div>
            </Show>
            <div class="pg-main stage" data-look=look tabindex="-1" role="region" aria-label="Stage: the running views">
            <div class="stage-bar">
                <button id="stage-run" on:click=move |_| run() disabled=busy>
                    {move || if session.status.get() == "paused" { "Play" } else { "Run" }}
                </button>
                <button id="stage-stop" class="secondary" on:click=move |_| stop()
                    disabled=move || !matches!(session.status.get(), "running" | "paused")>"Stop"</button>
                <Show when=move || modes.present.get()>
                    <button id="stage-qr" class="secondary" aria-pressed=move || show_qr.get().to_string()
                        on:click=move |_| show_qr.update(|q| *q = !*q)>"QR code"</button>
                </Show>
                <span class="muted stat" aria-live="polite">{move || session.message.get()}</span>
                // While a linked run waits for the model: how far its download has come.
                {download.map(|DownloadProgress(p)| view! {
                    <span id="stage-download" class="muted stat"
                        hidden=move || session.status.get() != "waiting" || p.get().0 == 0>
                        {move || format!("Model: {}", crate::loader::progress_words(p.get()))}
                    </span>
                })}
            </div>
            // `auto`'s choice, or word that an exact sampler may not finish.
            <p id="pg-estimate" class="estimate" aria-live="polite"
                hidden=move || session.views.with(|v| v.estimate.is_none())>
                {move || session.views.with(|v| v.estimate.clone().unwrap_or_default())}
            </p>
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
                    // `auto` shows the particles only once it has handed over to SMC.
                    <Show when=move || family(&session.method.get()) == Family::Smc
                        || (session.method.get() == "auto"
                            && session.views.with(|v| !v.smc.runs.is_empty()))>
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
