//! The clocks of the page and of the sampling worker.

/// `performance.now()` in milliseconds (in the page or in the sampling worker).
pub fn now_ms() -> f64 {
    use wasm_bindgen::JsCast;
    thread_local! {
        static PERFORMANCE: Option<web_sys::Performance> =
            js_sys::Reflect::get(&js_sys::global(), &"performance".into())
                .ok()
                .and_then(|p| p.dyn_into().ok());
    }
    PERFORMANCE.with(|p| p.as_ref().map_or(0.0, |p| p.now()))
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
