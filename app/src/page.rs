//! The page, top-down: one sentence of what it shows and the first lesson one click away,
//! the model's status (plain words; the engineering details folded), the playground with
//! its lessons, and, folded, the quick generation form (`quick_form`) and the papers'
//! experiments rerun on SmolLM2 (`papers`). Esc stops what
//! runs, Ctrl+Enter runs the form that has the focus.
//!
//! Parameters: `?model=URL` (a model on another origin than the page's is asked for
//! first, nothing fetched before the answer), `?backend=auto|webgpu|cpu`; `?present=1` opens presentation
//! mode (one large stage for a projector, 1280×720; also a toggle); `?embed=1` shows only
//! the stage of the state in the link with its Run button (for an iframe); `?pause=off`
//! keeps CPU forward passes from pausing for the page (for measurements); `?worker=off`
//! keeps generations and the playground's real-model runs on the page's thread instead of
//! the sampling worker (see `page_state`).
//!
//! Hooks: `main.app[data-phase]`, `main.app.present`, `main.app.embed`, `#start-lesson`,
//! `#present-toggle[aria-pressed]`, `#quick` (the folded quick form), `#papers` (the
//! papers' tables).

use crate::disclosure::Disclosure;
use crate::loader::{DownloadProgress, Loader, ModelStatus, Phase, expose_lose_device_hook};
use crate::page_state::{
    Modes, backend_choice, embed_choice, landed_choice, model_url, pausing_choice, present_choice,
};
use crate::papers::Papers;
use crate::playground::{Playground, RunRequest};
use crate::quick_form::QuickForm;
use leptos::prelude::*;
use leptos::task::spawn_local;

/// The page.
#[component]
pub fn App() -> impl IntoView {
    let phase = RwSignal::new(Phase::Checking);
    let loader = Loader {
        choice: backend_choice(),
        gpu_info: RwSignal::new(String::new()),
        phase,
        backend_info: RwSignal::new((String::new(), false)),
        model_info: RwSignal::new(String::new()),
        progress: RwSignal::new((0u64, None::<u64>)),
        notes: RwSignal::new(Vec::<String>::new()),
        no_gpu: RwSignal::new(false),
    };
    let modes = Modes {
        present: RwSignal::new(present_choice()),
        embed: embed_choice(),
        landed: landed_choice(),
    };
    provide_context(modes);
    provide_context(phase);
    provide_context(RunRequest(RwSignal::new(None)));
    provide_context(DownloadProgress(loader.progress));
    let url = model_url();
    crate::engine::set_pausing(pausing_choice());
    // Start-up: WebGPU, then the model; then watch the WebGPU device.
    spawn_local(loader.start(url.clone()));
    loader.watch_gpu();
    expose_lose_device_hook();
    crate::worker::client::expose_crash_hook();
    let present = modes.present;

    view! {
        <main class="app" class:present=move || present.get() class:embed=modes.embed class:landed=modes.landed
            data-phase=move || phase.get().name()>
            <header>
                <h1>"Strait"</h1>
                <p class="tagline">
                    "Forcing a language model to follow a grammar by hiding the tokens it forbids changes what the model would say. "
                    "This page shows how, and five ways to sample faithfully instead, on a small model running in this tab."
                </p>
                <p class="intro-actions">
                    <a id="start-lesson" class="button" href="#lesson=masking-bias&step=1">"Start the first lesson →"</a>
                    <button id="present-toggle" class="secondary" aria-pressed=move || present.get().to_string()
                        on:click=move |_| present.update(|p| *p = !*p)>
                        {move || if present.get() { "Leave presentation mode" } else { "Presentation mode" }}
                    </button>
                </p>
            </header>
            <ModelStatus loader=loader url=url/>
            <Playground/>
            <Disclosure id="quick" summary="Quick generation: one prompt, one sample, streamed token by token">
                <QuickForm phase=phase backend_info=loader.backend_info/>
            </Disclosure>
            <Show when=move || !modes.embed>
                <Disclosure id="papers" summary="The papers' experiments, rerun on this page's model">
                    <Papers/>
                </Disclosure>
            </Show>
        </main>
    }
}
