//! The quick generation form (`inputs.rs`, `output.rs`; the run's timing in `stats.rs`): a
//! prompt, a regex, `cars` (exact, the default), `lcd` or `lm` on the loaded model, each
//! token streamed with its probability (and the mass Z the mask kept, or that CARS had not
//! ruled out); an attempt CARS rejects is cleared and counted.
//!
//! Hooks: `#run-status[data-state]` (`idle`, `running`, `done`, `stopped`, `error`;
//! `data-run` counts runs), `#result-text` (the finished run's text), `#output .tok` (one
//! per token, with `data-p` and, under masking or CARS, `data-z`), `#stats[data-rejected]`,
//! `#generate`, `#stop`; `#advice` and `#advice-auto` when CARS may not finish soon
//! (`advice.rs`).

mod advice;
mod inputs;
mod output;
mod stats;

use crate::clock::now_ms;
use crate::engine::{Ended, Finished, Method, Request, StopCheck, TokenOut};
use crate::loader::Phase;
use crate::page_state::engine;
use inputs::{Inputs, QuickInputs};
use leptos::ev;
use leptos::prelude::*;
use leptos::task::spawn_local;
use output::{QuickOutput, Shown};
use stats::{PageOutput, Stats};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

const DEFAULT_PROMPT: &str =
    "On what date did Apollo 11 land on the Moon? Answer with the date only.";
const DEFAULT_REGEX: &str = "[0-9]{4}-[0-9]{2}-[0-9]{2}";

/// Set by Stop / Esc, read by the running sampler at every token.
static STOP: AtomicBool = AtomicBool::new(false);

/// Whether the keyboard focus is in the quick form (Ctrl+Enter there generates; elsewhere
/// it runs the playground).
pub fn focus_in_generate_controls() -> bool {
    document()
        .active_element()
        .and_then(|e| e.closest("#controls").ok().flatten())
        .is_some()
}

/// The quick form and its output; `phase` gates Generate (a model must be ready) and shows
/// a run; `backend_info` says whether a failed run may offer the CPU instead.
#[component]
pub fn QuickForm(phase: RwSignal<Phase>, backend_info: RwSignal<(String, bool)>) -> impl IntoView {
    let prompt = RwSignal::new(DEFAULT_PROMPT.to_string());
    let chat = RwSignal::new(true);
    // A model without a chat template takes the prompt as it is: the box is cleared and
    // disabled while such a model is loaded.
    let has_template = RwSignal::new(true);
    Effect::new(move || {
        if phase.get() == Phase::Ready
            && let Some(e) = engine()
        {
            let has = e.has_chat_template();
            if has != has_template.get_untracked() {
                has_template.set(has);
                chat.set(has);
            }
        }
    });
    let regex = RwSignal::new(DEFAULT_REGEX.to_string());
    let max_tokens = RwSignal::new("24".to_string());
    let seed = RwSignal::new("1".to_string());
    // Faithful by default: exact rejection, whose output follows the model's own
    // distribution over the regex; masking and the unconstrained model beside it.
    let method = RwSignal::new(Method::Cars);

    let tokens = RwSignal::new(Vec::<(usize, TokenOut)>::new());
    let stats = RwSignal::new(Stats::default());
    let run_state = RwSignal::new("idle");
    // Counts Generate presses (tests wait for it to change).
    let runs = RwSignal::new(0u32);
    let run_msg = RwSignal::new(String::new());
    let result = RwSignal::new(None::<Finished>);
    // The last run's request: the advice's link hands it to the playground.
    let request = RwSignal::new(None::<Request>);

    let generate = move || {
        if phase.get_untracked() != Phase::Ready {
            return;
        }
        runs.update(|n| *n += 1);
        let max = match max_tokens.get_untracked().trim().parse::<usize>() {
            Ok(n) if (1..=4096).contains(&n) => n,
            _ => {
                run_state.set("error");
                run_msg.set("Max tokens must be a whole number from 1 to 4096.".into());
                return;
            }
        };
        let seed = match seed.get_untracked().trim().parse::<u64>() {
            Ok(s) => s,
            Err(_) => {
                run_state.set("error");
                run_msg
                    .set("The seed must be a whole number from 0 to 18446744073709551615.".into());
                return;
            }
        };
        let req = Request {
            prompt: prompt.get_untracked(),
            chat: chat.get_untracked(),
            regex: regex.get_untracked(),
            max_tokens: max,
            seed,
            method: method.get_untracked(),
        };
        if engine().is_none() {
            return;
        }
        STOP.store(false, Ordering::Relaxed);
        request.set(Some(req.clone()));
        tokens.set(Vec::new());
        result.set(None);
        run_msg.set(String::new());
        run_state.set("running");
        stats.set(Stats {
            started: now_ms(),
            ..Stats::default()
        });
        phase.set(Phase::Running);
        spawn_local(async move {
            let mut out = PageOutput::new(tokens, stats);
            let stop_check: StopCheck = Rc::new(|| STOP.load(Ordering::Relaxed));
            // On the CPU path the sampling workers run it (once they have loaded).
            crate::worker::client::settled(&*stop_check).await;
            let r = match crate::worker::client::ready() {
                Some(w) => w.generate(&req, Box::new(out.clone()), stop_check).await,
                None => match crate::page_state::engine_with_weights().await {
                    Ok(engine) => engine.generate(&req, &mut out, stop_check).await,
                    Err(e) => Err(Ended::Failed(e)),
                },
            };
            // The tokens not yet shown, before the run's end is.
            out.flush();
            match r {
                Ok(f) => {
                    let stopped = STOP.load(Ordering::Relaxed);
                    run_state.set(if stopped { "stopped" } else { "done" });
                    run_msg.set(if stopped {
                        "Stopped.".into()
                    } else {
                        let how = if f.gpu_masks {
                            format!("{}, masks computed on WebGPU", req.method.name())
                        } else {
                            req.method.name().to_string()
                        };
                        if f.ended_with_eos {
                            format!("Done ({how}): the model ended the sequence.")
                        } else {
                            format!(
                                "Done ({how}): reached max tokens ({}) without EOS.",
                                req.max_tokens
                            )
                        }
                    });
                    result.set(Some(f));
                }
                Err(Ended::Stopped) => {
                    run_state.set("stopped");
                    run_msg.set("Stopped.".into());
                }
                Err(Ended::Failed(msg)) => {
                    run_state.set("error");
                    run_msg.set(msg);
                }
            }
            phase.set(Phase::Ready);
        });
    };
    let stop = move || {
        if phase.get_untracked() == Phase::Running {
            STOP.store(true, Ordering::Relaxed);
        }
    };

    // Ctrl+Enter typed in this section's controls (the playground handles it elsewhere);
    // Esc stops whatever runs.
    let keys = window_event_listener(ev::keydown, move |e: web_sys::KeyboardEvent| {
        if e.key() == "Enter" && (e.ctrl_key() || e.meta_key()) && focus_in_generate_controls() {
            e.prevent_default();
            generate();
        } else if e.key() == "Escape" {
            e.prevent_default();
            stop();
        }
    });
    on_cleanup(move || keys.remove());

    let shown = Shown {
        tokens,
        stats,
        run_state,
        runs,
        run_msg,
        result,
        request,
    };
    view! {
        <h2 class="section-title">"Quick generation with SmolLM2"</h2>
        <QuickInputs
            inputs=Inputs { prompt, chat, has_template, regex, max_tokens, seed, method }
            phase=phase
            on_generate=Callback::new(move |()| generate())
            on_stop=Callback::new(move |()| stop())
        />
        <QuickOutput shown=shown backend_info=backend_info on_stop=Callback::new(move |()| stop())/>
    }
}
