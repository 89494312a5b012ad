//! The quick form's early word when exact rejection may not finish soon: how much of the
//! model's mass the regex can hold at most, about how many attempts a sample that means,
//! and a link that runs the same prompt and regex in the playground with `auto` (which
//! hands over to weighted SMC when rejection cannot finish).
//!
//! Hooks: `#advice` (shown once the sampler has spoken, `data-mass` the bound), and its
//! link `#advice-auto` (`href` a playground permalink, `#v=1&s=…`).

use super::stats::{Stats, Unlikely};
use crate::engine::Request;
use leptos::prelude::*;
use playground::permalink;
use playground::state::PlaygroundState;
use sampler_core::samplers::watch::{count_text, mass_text};

/// The sentence for `u`, without the link.
fn words(u: &Unlikely) -> String {
    format!(
        "{} attempts in a row left the regex: outputs that match it hold at most about {} \
         of the model's probability, so exact rejection may need {} or more attempts for \
         one. Let it run, or ",
        u.attempts,
        mass_text(u.mass_bound),
        count_text(1.0 / u.mass_bound)
    )
}

/// The line under the stats once the exact sampler has said it may not finish soon; the
/// link stops this run (`on_stop`) and runs the same in the playground with `auto`.
#[component]
pub(super) fn Advice(
    stats: RwSignal<Stats>,
    request: RwSignal<Option<Request>>,
    on_stop: Callback<()>,
) -> impl IntoView {
    let href = move || {
        request
            .get()
            .map(|r| {
                let state = PlaygroundState::regex_on_real_model(
                    &r.regex,
                    &r.prompt,
                    r.chat,
                    r.max_tokens,
                    r.seed,
                    "auto",
                );
                format!("#{}", permalink::encode(&state))
            })
            .unwrap_or_default()
    };
    move || {
        stats.get().unlikely.map(|u| {
            view! {
                <p id="advice" class="estimate" role="status" data-mass=u.mass_bound.to_string()>
                    {words(&u)}
                    <a id="advice-auto" href=href on:click=move |_| on_stop.run(())>
                        "run it in the playground with auto"
                    </a>
                    ", which switches to weighted SMC: its samples come with weights that \
                     correct masking's distortion, and it finishes whatever the mass."
                </p>
            }
        })
    }
}
