//! Handing the JavaScript thread back while a CPU forward pass computes: the thread can then
//! run the caller's callbacks, timers and an `AbortSignal`'s abort.

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    /// `globalThis.setTimeout` (browsers, workers and node all have it).
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &js_sys::Function, ms: i32) -> JsValue;
}

/// Milliseconds since the epoch (`Date.now()`: every host has it).
pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Lets the host run whatever is queued (a macrotask turn).
pub async fn yield_now() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, 0);
    });
    let _ = JsFuture::from(promise).await;
}

/// Pauses a CPU forward pass every [`TurnPause::SLICE_MS`] to hand the thread back.
pub struct TurnPause {
    since: f64,
}

impl TurnPause {
    /// Milliseconds of computing between turns.
    pub const SLICE_MS: f64 = 50.0;
}

impl Default for TurnPause {
    fn default() -> Self {
        TurnPause { since: now_ms() }
    }
}

impl lm::Pause for TurnPause {
    fn due(&mut self) -> bool {
        now_ms() - self.since >= Self::SLICE_MS
    }

    async fn pause(&mut self) {
        yield_now().await;
        self.since = now_ms();
    }
}
