//! What is sampled: the example menu (with its two lines of explanation), the model, the
//! grammar editor, and for the real model its URL, the exact P^L button, the prompt and the
//! chat template.

use crate::playground::editor::GrammarEditor;
use crate::playground::form::{Form, KINDS, kind_key};
use crate::playground::link;
use crate::playground::session::Session;
use leptos::prelude::*;
use playground::detect::detect_kind;
use playground::examples::examples;
use playground::state::ModelChoice;

/// The rows of what is sampled.
#[component]
pub fn SetupRows(form: Form, session: Session, compare_mode: RwSignal<bool>) -> impl IntoView {
    let detected = Signal::derive(move || kind_key(detect_kind(&form.grammar.get())).to_string());
    let grammar_error = Signal::derive(move || session.grammar_error.get());
    let busy = move || matches!(session.status.get(), "running");
    view! {
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
        // The example's two lines, while its grammar and prompt are the form's; once either
        // is edited, a line saying so instead (the lines would describe text no longer there).
        {move || form.example.get().and_then(|id| examples().iter().find(|x| x.id == id)).map(|x| {
            let what = match (form.grammar.get() != x.grammar, form.prompt.get() != x.prompt) {
                (true, true) => Some("grammar and prompt"),
                (true, false) => Some("grammar"),
                (false, true) => Some("prompt"),
                (false, false) => None,
            };
            let edited = what.is_some();
            let text = match what {
                Some(what) => format!("Edited from the example “{}”: its notes no longer describe this {what}.", x.title),
                None => x.about(),
            };
            view! { <p id="pg-about" class="about" data-example=x.id data-edited=edited.to_string()>{text}</p> }
        })}
        <div class="row">
            <label>"Model "
                <select id="pg-model" on:change=move |e| form.model.set(event_target_value(&e))
                    prop:value=move || form.model.get()>
                    <option value="gsk">"toy: G_sk (ASAp's skewed grammar)"</option>
                    <option value="random">"toy: random n-gram LM"</option>
                    <option value="random-ab">"toy: random LM with an ab token"</option>
                    <option value="real">"SmolLM2-135M (downloaded above)"</option>
                </select>
            </label>
            <Show when=move || form.model.get().starts_with("random")>
                <label>"LM seed " <input id="pg-toy-seed" type="number" min="0" bind:value=form.toy_seed/></label>
            </Show>
            <Show when=move || form.model.get() == "random">
                <label>"vocab " <input id="pg-toy-vocab" type="number" min="2" max="8" bind:value=form.toy_vocab/></label>
            </Show>
            // The same model from the command line (one registry of toy models).
            {move || {
                // Read tracked, so the line follows the model, seed and vocabulary fields.
                let _ = (form.model.get(), form.toy_seed.get(), form.toy_vocab.get());
                form.state().ok().and_then(|s| match s.model {
                    ModelChoice::Toy(t) => Some(view! {
                        <span id="pg-toy-cli" class="hint">"strait "<code>{format!("--model {}", t.name())}</code></span>
                    }),
                    ModelChoice::Real { .. } => None,
                })
            }}
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
    }
}
