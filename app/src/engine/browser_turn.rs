//! Giving the browser its turn while the model computes on the page's thread: between
//! tokens ([`yield_now`]) and inside a CPU forward pass ([`FramePause`]).

use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

/// Hands the page's thread back to the browser at the pause points of a CPU forward pass once
/// [`FramePause::SLICE_MS`] have passed, so the page paints and sees input while a token
/// is computed (where the model runs on the page's thread; in the sampling worker pausing
/// is off).
pub struct FramePause {
    since: f64,
}

impl FramePause {
    /// Milliseconds of computing between pauses: about half a 60 Hz frame.
    pub const SLICE_MS: f64 = 8.0;

    /// Starts the first slice now.
    pub fn new() -> Self {
        FramePause {
            since: crate::clock::now_ms(),
        }
    }
}

impl Default for FramePause {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether CPU forward passes pause at all (`?pause=off` turns it off, to measure what
/// pausing costs and buys).
static PAUSING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns pausing in CPU forward passes on or off (see [`FramePause`]).
pub fn set_pausing(on: bool) {
    PAUSING.store(on, std::sync::atomic::Ordering::Relaxed);
}

impl lm::Pause for FramePause {
    fn due(&mut self) -> bool {
        PAUSING.load(std::sync::atomic::Ordering::Relaxed)
            && crate::clock::now_ms() - self.since >= Self::SLICE_MS
    }

    async fn pause(&mut self) {
        yield_now().await;
        self.since = crate::clock::now_ms();
    }
}

/// Gives the browser a turn: it repaints when a frame is due and handles input. The turn
/// is a `MessageChannel` task: unlike nested `setTimeout(0)` it is not clamped to 4 ms, and
/// unlike `scheduler.yield()` its continuation does not jump ahead of rendering (measured
/// by `e2e/smoothness.test.mjs`). Falls back to `setTimeout(0)`.
pub async fn yield_now() {
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        if let Ok(channel) = web_sys::MessageChannel::new() {
            channel.port1().set_onmessage(Some(&resolve));
            if channel.port2().post_message(&JsValue::UNDEFINED).is_ok() {
                return;
            }
        }
        if let Some(w) = web_sys::window()
            && w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0)
                .is_ok()
        {
            return;
        }
        let _ = resolve.call0(&JsValue::UNDEFINED);
    });
    let _ = JsFuture::from(promise).await;
}
