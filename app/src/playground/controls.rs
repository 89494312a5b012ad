//! The playground's controls: example menu, model, grammar editor, prompt, sampler and its
//! parameters, Run / Step / Stop with their shortcuts, the speed slider, compare mode,
//! copy-link and JSONL export.
//!
//! Hooks: `#pg-example`, `#pg-model`, `#pg-toy-seed`, `#pg-toy-vocab`, `#pg-prompt`,
//! `#pg-chat`, `#pg-method`, `#pg-n`, `#pg-steps`, `#pg-particles`, `#pg-ess`,
//! `#pg-max-tokens`, `#pg-seed`, `#pg-budget`, `#pg-run`, `#pg-step`, `#pg-stop`,
//! `#pg-speed`, `#pg-compare-mode`, `.pg-compare-method[value]`, `#pg-copy-link`,
//! `#pg-link`, `#pg-export-samples`, `#pg-export-events`.

use super::editor::GrammarEditor;
use super::form::{Form, KINDS, kind_key};
use super::frames::{SPEED_STEPS, speed_label};
use super::link;
use super::session::Session;
use leptos::prelude::*;
use playground::detect::detect_kind;
use playground::examples::examples;
use sampler_core::samplers::Method;

/// The methods the page offers (every implemented one).
pub fn methods() -> impl Iterator<Item = Method> {
    Method::ALL.into_iter()
}

/// One line on what a method does, for the select's tooltip and the hint under it.
fn method_hint(m: &str) -> &'static str {
    match m {
        "lm" => "unconstrained ancestral sampling (ignores the grammar)",
        "rs" => "rejection: whole sequences from P, keep the valid ones (exact up to max tokens)",
        "sample-verify" => {
            "rejection stopping at the first non-viable prefix (exact up to max tokens)"
        }
        "ars" => {
            "adaptive rejection: the shortest invalid prefix joins the trie (exact up to max tokens)"
        }
        "rsft" => "rejection with forbidden first tokens (exact up to max tokens)",
        "cars" => {
            "constrained adaptive rejection: every non-viable token joins the trie (exact up to max tokens)"
        }
        "lcd" => "token masking: fast, but biased",
        "gcd-budget" => "token masking with the budget-aware mask (regular grammars)",
        "asap" => "ASAp: masking reweighted by c̃, learned sample after sample",
        "mcmc-uniform" | "mcmc-priority" | "mcmc-restart" => {
            "MCMC over masked proposals: k steps per chain; stationary for P restricted to max tokens"
        }
        "wrs-smc" | "awrs-smc" | "twisted-smc" | "smc-gcd" => {
            "SMC: M weighted particles, resampled when ESS < τ·M"
        }
        "p-gcd-smc" => {
            "SMC guided by an HMM distilled from the model × the regex's automaton (regexes)"
        }
        "awrs-lcd" => "adaptive weighted rejection per token, without the weight",
        _ => "",
    }
}

/// The controls.
#[component]
pub fn Controls(
    form: Form,
    session: Session,
    compare_mode: RwSignal<bool>,
    speed_pos: RwSignal<u32>,
    on_run: Callback<()>,
    on_step: Callback<()>,
    on_stop: Callback<()>,
) -> impl IntoView {
    let detected = Signal::derive(move || kind_key(detect_kind(&form.grammar.get())).to_string());
    let is_regex = move || {
        let k = form.kind.get();
        if k == "auto" {
            detected.get() == "regex"
        } else {
            k == "regex"
        }
    };
    let grammar_error = Signal::derive(move || session.grammar_error.get());
    let link_text = RwSignal::new(String::new());
    let method_is = move |f: fn(Method) -> bool| {
        move || form.method.get().parse::<Method>().map(f).unwrap_or(false)
    };
    let busy = move || matches!(session.status.get(), "running");
    view! {
        <div class="pg-controls controls">
            <div class="row">
                <label>"Example "
                    <select id="pg-example" on:change=move |e| {
                        let id = event_target_value(&e);
                        if let Some(s) = link::example_state(&id) {
                            compare_mode.set(!s.compare.is_empty());
                            form.set(&s);
                            link::write_example_hash(&id);
                        }
                    } prop:value=move || form.example.get().unwrap_or_default()>
                        <option value="">"(your own)"</option>
                        {examples().iter().map(|x| view! {
                            <option value=x.id.to_string()>{x.title.to_string()}</option>
                        }).collect_view()}
                    </select>
                </label>
            </div>
            {move || form.example.get().and_then(|id| examples().iter().find(|x| x.id == id)).map(|x| view! {
                <p id="pg-about" class="about" data-example=x.id>{x.about()}</p>
            })}
            <div class="row">
                <label>"Model "
                    <select id="pg-model" on:change=move |e| form.model.set(event_target_value(&e))
                        prop:value=move || form.model.get()>
                        <option value="gsk">"toy: G_sk (skewed grammar, seed 004)"</option>
                        <option value="random">"toy: random n-gram LM"</option>
                        <option value="real">"SmolLM2-135M (downloaded above)"</option>
                    </select>
                </label>
                <Show when=move || form.model.get() == "random">
                    <label>"LM seed " <input id="pg-toy-seed" type="number" min="0" bind:value=form.toy_seed/></label>
                    <label>"vocab " <input id="pg-toy-vocab" type="number" min="2" max="16" bind:value=form.toy_vocab/></label>
                </Show>
            </div>
            <GrammarEditor text=form.grammar kind=form.kind detected=detected error=grammar_error kinds=KINDS/>
            <Show when=move || form.model.get() == "real">
                <div class="row">
                    <label>"GGUF URL (empty: the page's model) "
                        <input id="pg-model-url" type="text" class="link-text" placeholder="https://…/model.gguf"
                            prop:value=move || form.model_url.get().unwrap_or_default()
                            on:input=move |e| {
                                let v = event_target_value(&e);
                                form.model_url.set((!v.trim().is_empty()).then(|| v.trim().to_string()));
                            }/>
                    </label>
                    <Show when=move || form.model_url.get().is_some_and(|u| u != crate::page_state::model_url())>
                        <button id="pg-load-model" class="secondary" on:click=move |_| {
                            if let Ok(s) = form.state() {
                                link::reload_with_model(&s);
                            }
                        }>"Load this model"</button>
                    </Show>
                </div>
                <div class="row">
                    <button id="pg-exact" class="secondary" disabled=busy
                        on:click=move |_| { if let Ok(s) = form.state() { session.compute_exact(s); } }>
                        "Compute exact P^L"
                    </button>
                    <span class="muted hint">"enumerates the (finite) language with the model: one forward pass per prefix"</span>
                </div>
                <label class="wide">"Prompt"
                    <textarea id="pg-prompt" rows="2" bind:value=form.prompt></textarea>
                </label>
                <label class="check"><input id="pg-chat" type="checkbox" bind:checked=form.chat/>" chat template"</label>
            </Show>
            <div class="row">
                <label>"Sampler "
                    <select id="pg-method" on:change=move |e| form.method.set(event_target_value(&e))
                        prop:value=move || form.method.get()>
                        {methods().map(|m| {
                            // Budget masks and P-GCD's guide need a regular language: a regex.
                            let off = move || m.needs_regular() && !is_regex();
                            view! {
                                <option value=m.name() disabled=off
                                    title=move || if off() { "needs a regex (a regular language)" } else { "" }>
                                    {m.name()}
                                </option>
                            }
                        }).collect_view()}
                    </select>
                </label>
                <span class="muted hint">{move || method_hint(&form.method.get())}</span>
            </div>
            <div class="row params">
                <label title="samples (exact and masking methods), chains (MCMC) or runs (SMC)">"n " <input id="pg-n" type="number" min="1" bind:value=form.n/></label>
                <label class:dim=move || !method_is(Method::is_mcmc)()>"steps k " <input id="pg-steps" type="number" min="1" bind:value=form.steps/></label>
                <label class:dim=move || !method_is(Method::is_smc)()>"particles M " <input id="pg-particles" type="number" min="1" bind:value=form.particles/></label>
                <label class:dim=move || !method_is(Method::is_smc)()>"ESS threshold τ " <input id="pg-ess" type="number" min="0" max="1" step="0.05" bind:value=form.ess/></label>
                <label class:dim=move || !method_is(Method::is_exact)()
                    title="rejection samplers: B generations drawn in lockstep, one batched model call per step (shared by the worker pool), trie updates after the batch; still exact, and the same seed and B give the same samples">"batch B " <input id="pg-batch" type="number" min="1" max="16" bind:value=form.batch/></label>
                <label title="Part of the target: the exact samplers draw from P restricted to valid sequences of at most this many tokens (EOS included)">"max tokens " <input id="pg-max-tokens" type="number" min="1" bind:value=form.max_tokens/></label>
                <label>"seed " <input id="pg-seed" type="number" min="0" bind:value=form.seed/></label>
            </div>
            <div class="row">
                <label class="check"><input id="pg-compare-mode" type="checkbox" bind:checked=compare_mode/>" compare samplers"</label>
                <Show when=move || compare_mode.get()>
                    <span class="compare-methods">
                        {methods().map(|m| {
                            let name = m.name();
                            view! {
                                <label class="check"><input type="checkbox" class="pg-compare-method" value=name
                                    prop:checked=move || form.compare.get().iter().any(|c| c == name)
                                    on:change=move |e| {
                                        let on = event_target_checked(&e);
                                        form.compare.update(|v| {
                                            v.retain(|c| c != name);
                                            if on { v.push(name.to_string()); }
                                        });
                                    }/>{name}</label>
                            }
                        }).collect_view()}
                    </span>
                    <label>"LM calls per sampler " <input id="pg-budget" type="number" min="1" bind:value=form.budget/></label>
                </Show>
            </div>
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
                <super::worker_line::WorkerLine />
            </crate::disclosure::Disclosure>
        </div>
    }
}
