//! How it is sampled: the sampler (methods that need a regular language are offered only
//! for a regex), its parameters (dimmed where the sampler does not use them), and compare
//! mode with its samplers and their equal budget of model calls.

use super::methods::{FAMILIES, method_hint, method_label, methods};
use crate::playground::form::{Form, kind_key};
use leptos::prelude::*;
use playground::detect::detect_kind;
use sampler_core::samplers::Method;

/// The rows of the sampler and its parameters.
#[component]
pub fn SamplerRows(form: Form, compare_mode: RwSignal<bool>) -> impl IntoView {
    let is_regex = move || {
        let k = form.kind.get();
        if k == "auto" {
            kind_key(detect_kind(&form.grammar.get())) == "regex"
        } else {
            k == "regex"
        }
    };
    let method_is = move |f: fn(Method) -> bool| {
        move || form.method.get().parse::<Method>().map(f).unwrap_or(false)
    };
    view! {
        <div class="row">
            <label>"Sampler "
                <select id="pg-method" on:change=move |e| form.method.set(event_target_value(&e))
                    prop:value=move || form.method.get()>
                    {FAMILIES.into_iter().map(|(family, ms)| view! {
                        <optgroup label=family>
                            {ms.iter().map(|&m| {
                                // Budget masks and P-GCD's guide need a regular language: a regex.
                                let off = move || m.needs_regular() && !is_regex();
                                view! {
                                    <option value=m.name() disabled=off
                                        title=move || if off() {
                                            format!("{} (needs a regex: a regular language)", method_hint(m.name()))
                                        } else {
                                            method_hint(m.name()).to_string()
                                        }>
                                        {method_label(m)}
                                    </option>
                                }
                            }).collect_view()}
                        </optgroup>
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
    }
}
