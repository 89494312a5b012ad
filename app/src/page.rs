//! The page, top-down: the status of the model (`loader`), the playground, the quick
//! generation form (`quick_form`). Esc stops what runs, Ctrl+Enter runs the form that has
//! the focus.
//!
//! Parameters: `?model=URL`, `?backend=auto|webgpu|cpu`; `?pause=off` keeps CPU forward
//! passes from pausing for the page (for measurements); `?worker=off` keeps generations
//! and the playground's real-model runs on the page's thread instead of the sampling
//! worker (see `page_state`).

use crate::loader::{Loader, ModelStatus, Phase, expose_lose_device_hook};
use crate::page_state::{backend_choice, model_url, pausing_choice};
use crate::playground::Playground;
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
    let url = model_url();
    crate::engine::set_pausing(pausing_choice());
    // Start-up: WebGPU, then the model; then watch the WebGPU device.
    spawn_local(loader.start(url.clone()));
    loader.watch_gpu();
    expose_lose_device_hook();

    view! {
        <main class="app" data-phase=move || phase.get().name()>
            <header>
                <h1>"Strait"</h1>
                <p class="tagline">"Constrained sampling from a small language model, running in this page."</p>
            </header>
            <ModelStatus loader=loader url=url/>
            <Playground/>
            <QuickForm phase=phase backend_info=loader.backend_info/>
        </main>
    }
}
