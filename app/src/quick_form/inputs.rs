//! The quick form's inputs: prompt, chat template, regex, max tokens, seed, method, and the
//! Generate and Stop buttons.

use crate::engine::Method;
use crate::loader::Phase;
use leptos::prelude::*;

/// The methods offered, in order, with a few words on each.
const METHODS: [(Method, &str); 3] = [
    (Method::Lm, "unconstrained"),
    (Method::Lcd, "token masking"),
    (Method::Cars, "exact"),
];

/// What the user fills in.
#[derive(Clone, Copy)]
pub(super) struct Inputs {
    pub(super) prompt: RwSignal<String>,
    pub(super) chat: RwSignal<bool>,
    /// Whether the loaded model has a chat template (the box is disabled without one).
    pub(super) has_template: RwSignal<bool>,
    pub(super) regex: RwSignal<String>,
    pub(super) max_tokens: RwSignal<String>,
    pub(super) seed: RwSignal<String>,
    pub(super) method: RwSignal<Method>,
}

/// The form's controls; Generate is enabled once a model is ready, Stop while a run goes.
#[component]
pub(super) fn QuickInputs(
    inputs: Inputs,
    phase: RwSignal<Phase>,
    on_generate: Callback<()>,
    on_stop: Callback<()>,
) -> impl IntoView {
    let Inputs {
        prompt,
        chat,
        has_template,
        regex,
        max_tokens,
        seed,
        method,
    } = inputs;
    let busy = move || phase.get() != Phase::Ready;
    view! {
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
                    {METHODS.map(|(m, words)| view! {
                        <label>
                            <input type="radio" name="method" id=format!("method-{}", m.name())
                                value=m.name()
                                prop:checked=move || method.get() == m
                                on:change=move |_| method.set(m)/>
                            {format!(" {} ({words})", m.name())}
                        </label>
                    })}
                </fieldset>
            </div>
            <div class="row buttons">
                <button id="generate" on:click=move |_| on_generate.run(()) disabled=busy>
                    "Generate"
                </button>
                <span class="shortcut"><kbd>"Ctrl"</kbd>"/"<kbd>"⌘"</kbd>" + "<kbd>"Enter"</kbd></span>
                <button id="stop" on:click=move |_| on_stop.run(()) disabled=move || phase.get() != Phase::Running>
                    "Stop"
                </button>
                <span class="shortcut"><kbd>"Esc"</kbd></span>
            </div>
        </section>
    }
}
