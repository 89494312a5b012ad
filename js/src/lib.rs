//! Strait's samplers for JavaScript: the wasm half of the npm package (`js/package/` is the
//! other half, the ES module users import). [`Model`] is a model the samplers run over —
//! a GGUF file on our CPU forward pass, a toy model, or any model given as a JavaScript
//! function — and its `sample`, `enumerate` and `score` take the same request and hand out
//! the same records as the `strait` command line and Python (`sampler_core::request`).
//!
//! Runs in browsers (on the page's thread or in a worker) and in node; a long forward
//! pass hands the thread back between slices ([`turn::TurnPause`]), so an `AbortSignal`
//! stops a run.

#![deny(missing_docs)]

mod backend;
mod constraint;
mod events;
mod function_lm;
mod model;
mod turn;

pub use model::Model;

use wasm_bindgen::prelude::*;

/// Panics reach the console with their message (there should be none: errors are
/// returned as exceptions).
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}
