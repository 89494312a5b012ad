//! Page-wide state and the address's parameters: the loaded model ([`engine`]), which load
//! it came from ([`engine_generation`]), the page's layout ([`Modes`]), and `?model=`,
//! `?backend=`, `?worker=`, `?workers=`, `?pause=`, `?present=`, `?embed=`.

use crate::engine::{Choice, Engine};
use std::cell::RefCell;
use std::rc::Rc;

/// Where the default model is: beside the page (`cargo xtask serve`, `cargo xtask dist`), or
/// the URL `cargo xtask dist --model-url URL` built in (`STRAIT_MODEL_URL` at build time);
/// `?model=URL` overrides it.
const DEFAULT_MODEL_URL: &str = match option_env!("STRAIT_MODEL_URL") {
    Some(url) => url,
    None => "models/SmolLM2-135M-Instruct.Q4_1.gguf",
};

thread_local! {
    /// The loaded model (the page is single-threaded; GPU handles are not `Send`).
    static ENGINE: RefCell<Option<Rc<Engine>>> = const { RefCell::new(None) };
}
/// The loaded model, once the page has loaded it.
pub fn engine() -> Option<Rc<Engine>> {
    ENGINE.with(|e| e.borrow().clone())
}

thread_local! {
    /// Counts models loaded, so caches keyed by the model notice a new one.
    static ENGINE_GENERATION: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Which model load the current engine comes from (a new file from disk bumps it).
pub fn engine_generation() -> u64 {
    ENGINE_GENERATION.with(|g| g.get())
}

/// Makes `engine` the page's model (`None` while another loads); a new model bumps
/// [`engine_generation`].
pub fn set_engine(engine: Option<Rc<Engine>>) {
    if engine.is_some() {
        ENGINE_GENERATION.with(|g| g.set(g.get() + 1));
    }
    ENGINE.with(|e| *e.borrow_mut() = engine);
}

/// The page's engine with its weights on the page's thread, for a run that cannot go to a
/// sampling worker (none could start, or all died): the engine itself on WebGPU or when it
/// holds them, else the weights read from the model file the first time such a run comes,
/// and kept for the next (the same model: [`engine_generation`] does not change).
pub async fn engine_with_weights() -> Result<Rc<Engine>, String> {
    let e = engine().ok_or("the model is not loaded yet")?;
    if e.has_weights() {
        return Ok(e);
    }
    let full = e.with_weights().await?;
    ENGINE.with(|now| {
        let mut now = now.borrow_mut();
        // Unless another model came meanwhile.
        if now.as_ref().is_some_and(|n| Rc::ptr_eq(n, &e)) {
            *now = Some(full.clone());
        }
    });
    Ok(full)
}

/// The value of `?name=` in the page's address, if present.
fn query_param(name: &str) -> Option<String> {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|q| web_sys::UrlSearchParams::new_with_str(&q).ok())
        .and_then(|p| p.get(name))
}

/// The model the page loads without `?model=`.
pub fn default_model_url() -> String {
    DEFAULT_MODEL_URL.to_string()
}

/// Whether the page must ask before fetching `url`: a link's `?model=` on another origin
/// than the page's (the default model and the page's own origin load without asking).
/// Returns that origin.
pub fn model_needs_consent(url: &str) -> Option<String> {
    let from_link = query_param("model").is_some_and(|m| !m.is_empty());
    (from_link && url != DEFAULT_MODEL_URL)
        .then(|| crate::download::other_origin(url))
        .flatten()
}

/// The model URL the page loads (`?model=URL`, else the default).
pub fn model_url() -> String {
    query_param("model")
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| DEFAULT_MODEL_URL.to_string())
}

/// The backend asked for by `?backend=auto|webgpu|cpu` (default `auto`), or the burn
/// engine by `?engine=burn`.
pub fn backend_choice() -> Choice {
    if query_param("engine").is_some_and(|e| e == "burn") {
        return Choice::Burn;
    }
    query_param("backend")
        .and_then(|b| Choice::parse(&b))
        .unwrap_or(Choice::Auto)
}

/// Whether `?worker=off` asks the page to sample on its own thread.
pub fn worker_choice() -> bool {
    query_param("worker").is_none_or(|v| v != "off")
}

/// Whether the pool's workers may share one sequence's products (`?split=off` says not;
/// they need the page to be cross-origin isolated too: `worker::split::create`).
pub fn split_choice() -> bool {
    query_param("split").is_none_or(|v| v != "off")
}

/// Whether a pool of several workers splits the model by rows between them (about one
/// copy in all; the lead runs every job) rather than giving each a whole copy (jobs side
/// by side): `?pool=shares` asks for shares (which also need the page cross-origin
/// isolated, `worker::split::create`), `?pool=copies` for copies; `None` leaves it to the
/// pool's plan (shares where whole copies would not fit every core's worker).
pub fn pool_choice() -> Option<bool> {
    match query_param("pool")?.as_str() {
        "shares" => Some(true),
        "copies" => Some(false),
        _ => None,
    }
}

/// The pool size asked for by `?workers=N` (a positive number), if any.
pub fn workers_choice() -> Option<usize> {
    query_param("workers")
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
}

/// Whether `?pause=off` asks CPU forward passes not to pause for the page (see
/// `engine/browser_turn.rs`).
pub fn pausing_choice() -> bool {
    query_param("pause").is_none_or(|v| v != "off")
}

/// How the page is laid out; the page provides it as context.
#[derive(Clone, Copy)]
pub struct Modes {
    /// Presentation mode: the stage large, the controls folded away.
    pub present: leptos::prelude::RwSignal<bool>,
    /// Embedded (`?embed=1`): only the stage and its Run button.
    pub embed: bool,
    /// The page opened on a link (`#v=…`, `#example=…`, `#lesson=…`): the intro and the
    /// lesson list fold to a line each and the stage comes into view.
    pub landed: bool,
}

/// Whether the address names something to show (any hash): the page then lands on it.
pub fn landed_choice() -> bool {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .is_some_and(|h| h.len() > 1)
}

/// Whether `?present=1` asks for presentation mode.
pub fn present_choice() -> bool {
    query_param("present").is_some_and(|v| v == "1" || v == "true")
}

/// Whether `?embed=1` asks for the stage alone (for an iframe).
pub fn embed_choice() -> bool {
    query_param("embed").is_some_and(|v| v == "1" || v == "true")
}

/// Reloads the page with `?backend=key` (other parameters kept).
pub fn reload_with_backend(key: &str) {
    let Some(w) = web_sys::window() else { return };
    let loc = w.location();
    let q = loc.search().unwrap_or_default();
    if let Ok(p) = web_sys::UrlSearchParams::new_with_str(&q) {
        p.set("backend", key);
        let path = loc.pathname().unwrap_or_default();
        let _ = loc.set_href(&format!("{path}?{}", String::from(p.to_string())));
    }
}
