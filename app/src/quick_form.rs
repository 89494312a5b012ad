//! The quick generation form: a prompt, a regex, `lm` or `lcd` on the loaded model, each
//! token streamed with its probability (and, under masking, the mass Z the mask kept).
//!
//! Hooks: `#run-status[data-state]` (`idle`, `running`, `done`, `stopped`, `error`;
//! `data-run` counts runs), `#result-text` (the finished run's text), `#output .tok` (one
//! per token, with `data-p` and, under masking, `data-z`), `#generate`, `#stop`.

use crate::clock::now_ms;
use crate::engine::{Ended, Finished, Method, Output, Request, StopCheck, TokenOut};
use crate::loader::Phase;
use crate::page_state::{engine, reload_with_backend};
use leptos::ev;
use leptos::prelude::*;
use leptos::task::spawn_local;
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

/// Timing of the current run, in milliseconds of `performance.now()`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Stats {
    started: f64,
    first: Option<f64>,
    last: f64,
    tokens: usize,
}

impl Stats {
    fn time_to_first_ms(&self) -> Option<f64> {
        self.first.map(|f| f - self.started)
    }
    /// Decode rate: tokens after the first over the time since the first.
    fn tokens_per_s(&self) -> Option<f64> {
        let first = self.first?;
        (self.tokens > 1 && self.last > first)
            .then(|| (self.tokens - 1) as f64 * 1000.0 / (self.last - first))
    }
}

/// What the sampler's tokens do to the page.
struct PageOutput {
    tokens: RwSignal<Vec<(usize, TokenOut)>>,
    stats: RwSignal<Stats>,
}

impl Output for PageOutput {
    fn token(&mut self, t: TokenOut) {
        let now = now_ms();
        self.stats.update(|s| {
            s.first.get_or_insert(now);
            s.last = now;
            s.tokens += 1;
        });
        self.tokens.update(|v| {
            let i = v.len();
            v.push((i, t));
        });
    }
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
    let method = RwSignal::new(Method::Lcd);

    let tokens = RwSignal::new(Vec::<(usize, TokenOut)>::new());
    let stats = RwSignal::new(Stats::default());
    let run_state = RwSignal::new("idle");
    // Counts Generate presses (tests wait for it to change).
    let runs = RwSignal::new(0u32);
    let run_msg = RwSignal::new(String::new());
    let result = RwSignal::new(None::<Finished>);

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
        let Some(engine) = engine() else {
            return;
        };
        STOP.store(false, Ordering::Relaxed);
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
            let mut out = PageOutput { tokens, stats };
            let stop_check: StopCheck = Rc::new(|| STOP.load(Ordering::Relaxed));
            // On the CPU path the sampling worker runs it when it is ready.
            let r = match crate::worker::client::ready() {
                Some(w) => w.generate(&req, Box::new(out), stop_check).await,
                None => engine.generate(&req, &mut out, stop_check).await,
            };
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

    let busy = move || phase.get() != Phase::Ready;

    view! {
        <h2 class="section-title">"Quick generation with SmolLM2"</h2>
        <section id="controls" class="controls">
            <label class="wide">
                "Prompt"
                <textarea id="prompt" rows="3" bind:value=prompt></textarea>
            </label>
            <label class="check">
                <input id="chat" type="checkbox" bind:checked=chat
                    disabled=move || !has_template.get()
                    title=move || if has_template.get() { "" } else { "this model file has no chat template" }/>
                " chat template"
            </label>
            <label class="wide">
                "Regex (the output must match it entirely)"
                <input id="regex" type="text" spellcheck="false" bind:value=regex/>
            </label>
            <div class="row">
                <label>"Max tokens " <input id="max-tokens" type="number" min="1" max="4096" bind:value=max_tokens/></label>
                <label>"Seed " <input id="seed" type="number" min="0" bind:value=seed/></label>
                <fieldset class="method">
                    <legend>"Method"</legend>
                    <label>
                        <input type="radio" name="method" id="method-lm" value="lm"
                            prop:checked=move || method.get() == Method::Lm
                            on:change=move |_| method.set(Method::Lm)/>
                        " lm (unconstrained)"
                    </label>
                    <label>
                        <input type="radio" name="method" id="method-lcd" value="lcd"
                            prop:checked=move || method.get() == Method::Lcd
                            on:change=move |_| method.set(Method::Lcd)/>
                        " lcd (token masking)"
                    </label>
                </fieldset>
            </div>
            <div class="row buttons">
                <button id="generate" on:click=move |_| generate() disabled=busy>
                    "Generate"
                </button>
                <span class="shortcut"><kbd>"Ctrl"</kbd>"/"<kbd>"⌘"</kbd>" + "<kbd>"Enter"</kbd></span>
                <button id="stop" on:click=move |_| stop() disabled=move || phase.get() != Phase::Running>
                    "Stop"
                </button>
                <span class="shortcut"><kbd>"Esc"</kbd></span>
            </div>
        </section>

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
            <div id="stats" class="muted">
                {move || {
                    let s = stats.get();
                    if s.tokens == 0 {
                        return String::new();
                    }
                    let mut out = format!("{} tokens", s.tokens);
                    if let Some(ms) = s.time_to_first_ms() {
                        out.push_str(&format!(" · first token after {ms:.0} ms"));
                    }
                    if let Some(r) = s.tokens_per_s() {
                        out.push_str(&format!(" · {r:.1} tokens/s"));
                    }
                    out
                }}
            </div>
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
            "p: probability of the token under the model; Z: the probability mass the regex mask kept at that step (lcd)."
        </footer>
    }
}

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
