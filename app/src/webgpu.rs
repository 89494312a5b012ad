//! Is WebGPU usable here? `navigator.gpu` present and an adapter offered.
//!
//! Read through `js_sys::Reflect` so the page needs no unstable web-sys APIs for this.

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// What the page learned about WebGPU.
#[derive(Clone, Debug, PartialEq)]
pub enum GpuStatus {
    /// An adapter is available; a short description of it.
    Available(String),
    /// WebGPU cannot be used; why, in a few words (the page then runs the model on the
    /// CPU, unless `?backend=webgpu` asked for WebGPU).
    Missing(String),
}

/// Why there is no WebGPU when the browser has no `navigator.gpu`.
pub const NO_NAVIGATOR_GPU: &str = "this browser has no WebGPU (navigator.gpu is missing)";

/// How to get WebGPU, for the message when `?backend=webgpu` asked for it.
pub const ENABLE_WEBGPU: &str = "Use a browser with WebGPU enabled (Chrome or Edge 113+, \
Safari 26+, Firefox 141+ on Windows) on a page served over https or from localhost; Chromium on \
Linux needs --enable-unsafe-webgpu --enable-features=Vulkan. Or drop ?backend=webgpu: the model \
then runs on the CPU (wasm).";

/// Checks `navigator.gpu` and asks for an adapter: on the page's thread or in a worker
/// (both have a `navigator`).
pub async fn detect() -> GpuStatus {
    let navigator =
        Reflect::get(&js_sys::global(), &"navigator".into()).unwrap_or(JsValue::UNDEFINED);
    if !navigator.is_object() {
        return GpuStatus::Missing("no navigator: the page must run in a browser".into());
    }
    let gpu = Reflect::get(&navigator, &"gpu".into()).unwrap_or(JsValue::UNDEFINED);
    if gpu.is_undefined() || gpu.is_null() {
        return GpuStatus::Missing(NO_NAVIGATOR_GPU.into());
    }
    let adapter = match call_method(&gpu, "requestAdapter", &[]) {
        Ok(p) => JsFuture::from(p).await,
        Err(e) => Err(e),
    };
    match adapter {
        Ok(a) if !a.is_null() && !a.is_undefined() => GpuStatus::Available(describe(&a)),
        Ok(_) => GpuStatus::Missing(
            "the browser offered no GPU adapter (navigator.gpu.requestAdapter() returned null; \
             the GPU may be blocklisted or WebGPU disabled)"
                .into(),
        ),
        Err(e) => GpuStatus::Missing(format!(
            "asking for a GPU adapter failed: {}",
            js_error_message(&e)
        )),
    }
}

fn call_method(target: &JsValue, name: &str, args: &[JsValue]) -> Result<Promise, JsValue> {
    let f: Function = Reflect::get(target, &name.into())?.dyn_into()?;
    let this = target.clone();
    let r = match args {
        [] => f.call0(&this)?,
        [a] => f.call1(&this, a)?,
        _ => return Err("too many arguments".into()),
    };
    r.dyn_into::<Promise>()
}

/// "vendor architecture (description)" from `adapter.info` where the browser tells it.
fn describe(adapter: &JsValue) -> String {
    let info = Reflect::get(adapter, &"info".into()).unwrap_or(JsValue::UNDEFINED);
    if !info.is_object() {
        return "a WebGPU adapter".into();
    }
    let field = |k: &str| {
        Reflect::get(&info, &k.into())
            .ok()
            .and_then(|v| v.as_string())
            .filter(|s| !s.is_empty())
    };
    let parts: Vec<String> = ["vendor", "architecture", "device", "description"]
        .iter()
        .filter_map(|k| field(k))
        .collect();
    if parts.is_empty() {
        "a WebGPU adapter".into()
    } else {
        parts.join(" · ")
    }
}

/// The message of a JS error (or its string form).
pub fn js_error_message(e: &JsValue) -> String {
    if let Some(s) = e.as_string() {
        return s;
    }
    if let Some(obj) = e.dyn_ref::<Object>() {
        if let Some(m) = Reflect::get(obj, &"message".into())
            .ok()
            .and_then(|m| m.as_string())
        {
            return m;
        }
        return String::from(obj.to_string());
    }
    format!("{e:?}")
}
