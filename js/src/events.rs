//! The sampler's events handed to the caller's `onEvent` as they happen (the same events
//! the page animates and `strait sample --events` prints), and Stop through an
//! `AbortSignal`.

use sampler_core::{Event, EventSink};
use serde::Serialize as _;
use wasm_bindgen::prelude::*;

/// The caller's `onEvent` and `signal`, either optional.
pub struct JsSink {
    on_event: Option<js_sys::Function>,
    signal: Option<JsValue>,
    /// The first exception `onEvent` threw: the run ends with it.
    pub thrown: Option<JsValue>,
}

impl JsSink {
    /// A sink over the request's `onEvent` and `signal` (each `undefined` when not given).
    pub fn new(on_event: JsValue, signal: JsValue) -> Result<JsSink, String> {
        let on_event = match on_event {
            v if v.is_undefined() || v.is_null() => None,
            v => Some(
                v.dyn_into::<js_sys::Function>()
                    .map_err(|_| "onEvent must be a function".to_string())?,
            ),
        };
        let signal = (!signal.is_undefined() && !signal.is_null()).then_some(signal);
        Ok(JsSink {
            on_event,
            signal,
            thrown: None,
        })
    }
}

impl EventSink for JsSink {
    fn emit(&mut self, event: Event) {
        let Some(f) = &self.on_event else { return };
        if self.thrown.is_some() {
            return;
        }
        let value = match event.serialize(&serializer()) {
            Ok(v) => v,
            Err(e) => JsValue::from_str(&format!("an event that could not be converted: {e}")),
        };
        if let Err(e) = f.call1(&JsValue::UNDEFINED, &value) {
            self.thrown = Some(e);
        }
    }

    fn cancelled(&self) -> bool {
        self.thrown.is_some()
            || self.signal.as_ref().is_some_and(|s| {
                js_sys::Reflect::get(s, &JsValue::from_str("aborted")).is_ok_and(|a| a.is_truthy())
            })
    }
}

/// How records and events become JavaScript values: plain objects, `null` for a missing
/// value (as in the command line's JSON lines).
pub fn serializer() -> serde_wasm_bindgen::Serializer {
    serde_wasm_bindgen::Serializer::new()
        .serialize_missing_as_null(true)
        .serialize_maps_as_objects(true)
}
