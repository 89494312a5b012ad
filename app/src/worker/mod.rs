//! The sampling worker: a dedicated Web Worker that runs the same wasm module as the page,
//! holds its own copy of the model (CPU forward pass) and drives the playground's samplers,
//! so that the page's thread only animates.
//!
//! - [`protocol`]: the messages, sent with serde-wasm-bindgen (±∞ log weights survive).
//! - [`host`]: the worker's side (`worker_main`, called by `worker.js`): loads the model
//!   from the bytes the page transfers, builds each run's constraint and prompt, drives the
//!   sampler and posts what it records before every model call.
//! - [`client`]: the page's side: starts the worker, hands it the model, sends runs and
//!   Stop, applies the batches to the page's own [`playground::runner::Run`], and measures
//!   the message overhead.

pub mod client;
pub mod host;
pub mod protocol;

/// Converts a message to a JS value: u64s (seeds, counters) as BigInts, so seeds above
/// 2^53 survive (serde-wasm-bindgen reads both numbers and BigInts back).
pub fn to_js<T: serde::Serialize>(msg: &T) -> Result<wasm_bindgen::JsValue, String> {
    msg.serialize(
        &serde_wasm_bindgen::Serializer::new().serialize_large_number_types_as_bigints(true),
    )
    .map_err(|e| e.to_string())
}

/// `performance.timeOrigin + performance.now()`: milliseconds on a clock the page and the
/// worker share (each has its own `performance.now()` origin).
pub fn shared_clock_ms() -> f64 {
    use wasm_bindgen::JsCast;
    js_sys::Reflect::get(&js_sys::global(), &"performance".into())
        .ok()
        .and_then(|p| p.dyn_into::<web_sys::Performance>().ok())
        .map_or_else(js_sys::Date::now, |p| p.time_origin() + p.now())
}
