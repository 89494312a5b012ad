//! Strait's playground page: a leptos client-side-rendered app (built by `cargo xtask build`: cargo, then wasm-bindgen).
//!
//! The page checks for WebGPU, downloads the model with a progress bar (cached in Cache
//! Storage), loads it (on WebGPU, or on `lm`'s CPU forward pass compiled to wasm, see
//! `engine::backend`), and samples from it under a regex constraint with sampler-core's
//! `lm` or `lcd`, streaming each token with its probability (and, under token masking, the
//! mass Z the mask kept); the playground below animates every sampler. On the CPU path the
//! sampling runs in a Web Worker started from this same module (`worker`).
//!
//! # Key modules
//! - [`page`]: the page, top-down, and its modes (presentation, embedded); [`page_state`]: the loaded model and the address's
//!   parameters.
//! - [`loader`]: WebGPU detection, the model's download and load, the status section.
//! - [`quick_form`]: the quick generation form and its streamed output.
//! - [`webgpu`]: is WebGPU usable here.
//! - [`download`]: streamed, cached model download.
//! - [`engine`]: the model and the samplers behind the page.
//! - [`worker`]: the sampling worker (quick-form generations, playground runs and exact
//!   enumerations on the CPU path).
//! - [`playground`]: the playground (toy and real models, every sampler animated, compare
//!   mode, permalinks), on the DOM-free `playground` crate.
//! - [`papers`]: the papers' experiments rerun on SmolLM2, each figure a rerun link.
//! - [`format`], [`clock`]: text formatting and `performance.now()`, shared by all.
//! - [`disclosure`]: folded details that remember being opened.

mod clock;
mod disclosure;
mod download;
mod engine;
mod format;
mod loader;
mod model_file;
mod page;
mod page_state;
mod papers;
mod playground;
mod quick_form;
mod webgpu;
mod worker;

fn main() {
    console_error_panic_hook::set_once();
    // The same module runs the sampling worker (`worker.js` calls `worker_main`): there is
    // no page to mount in a worker.
    if web_sys::window().is_some() {
        leptos::mount::mount_to_body(page::App);
    }
}
