//! The URL hash and files: permalinks (`#v=1&s=…`, decoded as untrusted by the
//! `playground` crate), example deep links (`#example=<id>`), lesson links
//! (`#lesson=<id>&step=<n>`), copy-link, downloads (JSONL, and the views' pictures).

use super::session::Session;
use leptos::prelude::*;
use playground::state::PlaygroundState;
use playground::{examples, export, lessons, permalink};
use wasm_bindgen::JsCast;

/// The state the page opens with, and what to tell the user about the link.
pub struct Start {
    /// The state to show.
    pub state: PlaygroundState,
    /// Why the link was not used, when it was not.
    pub message: Option<String>,
    /// The lesson step the link opens, when it is a lesson link.
    pub lesson: Option<lessons::Place>,
    /// Whether a link named what to show (a permalink, an example or a lesson step, read
    /// without error): the page then lands on it and runs it.
    pub linked: bool,
}

fn hash() -> String {
    window().location().hash().unwrap_or_default()
}

/// The state of a hash body (without `#`): a permalink, an example link, or the default.
pub fn state_of_hash(h: &str) -> Start {
    let h = h.strip_prefix('#').unwrap_or(h);
    let fallback = |why: String| Start {
        state: PlaygroundState::default(),
        message: Some(format!(
            "This link could not be opened ({why}); the default example is shown instead."
        )),
        lesson: None,
        linked: false,
    };
    if h.is_empty() {
        return Start {
            state: PlaygroundState::default(),
            message: None,
            lesson: None,
            linked: false,
        };
    }
    if let Some(place) = lessons::parse_link(h) {
        return match place {
            Ok(place) => Start {
                state: place.step().state(),
                message: None,
                lesson: Some(place),
                linked: true,
            },
            Err(why) => fallback(why),
        };
    }
    if let Some(id) = h.strip_prefix("example=") {
        return match example_state(id) {
            Some(state) => Start {
                state,
                message: None,
                lesson: None,
                linked: true,
            },
            None => fallback(format!("there is no example named {:?}", truncate(id))),
        };
    }
    match permalink::decode(h) {
        Ok(state) => Start {
            state,
            message: None,
            lesson: None,
            linked: true,
        },
        Err(e) => fallback(e.to_string()),
    }
}

/// The state the URL asks for.
pub fn initial_state() -> Start {
    state_of_hash(&hash())
}

fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

/// The state of the example `id`.
pub fn example_state(id: &str) -> Option<PlaygroundState> {
    examples::example(id).map(|e| e.state())
}

fn replace_hash(body: &str) {
    let w = window();
    let loc = w.location();
    let base = format!(
        "{}{}",
        loc.pathname().unwrap_or_default(),
        loc.search().unwrap_or_default()
    );
    if let Ok(h) = w.history() {
        let _ = h.replace_state_with_url(
            &wasm_bindgen::JsValue::NULL,
            "",
            Some(&format!("{base}#{body}")),
        );
    }
}

/// Puts `state` in the URL hash (no new history entry).
pub fn write_hash(state: &PlaygroundState) {
    replace_hash(&permalink::encode(state));
}

/// Puts a lesson step's link in the URL hash.
pub fn write_lesson_hash(place: lessons::Place) {
    replace_hash(&place.hash());
}

/// Puts `#example=<id>` in the URL hash.
pub fn write_example_hash(id: &str) {
    replace_hash(&format!("example={id}"));
}

/// Reloads the page with `?model=<the state's URL>` and the state in the hash.
pub fn reload_with_model(state: &PlaygroundState) {
    let playground::state::ModelChoice::Real { url: Some(url) } = &state.model else {
        return;
    };
    let loc = window().location();
    let q = loc.search().unwrap_or_default();
    if let Ok(p) = web_sys::UrlSearchParams::new_with_str(&q) {
        p.set("model", url);
        let path = loc.pathname().unwrap_or_default();
        let _ = loc.set_href(&format!(
            "{path}?{}#{}",
            String::from(p.to_string()),
            permalink::encode(state)
        ));
    }
}

/// Writes the permalink of `state` to the hash and the clipboard; returns the link.
pub fn copy_link(state: &PlaygroundState) -> String {
    write_hash(state);
    let url = window().location().href().unwrap_or_default();
    let clipboard = window().navigator().clipboard();
    // The promise may reject (no permission); the link is also shown in a text field.
    let _ = clipboard.write_text(&url);
    url
}

/// The address to share with a class: this page's, hash included, without `?present=`
/// (a phone opens the step itself, not presentation mode).
pub fn share_url() -> String {
    let loc = window().location();
    let mut url = format!(
        "{}{}",
        loc.origin().unwrap_or_default(),
        loc.pathname().unwrap_or_default()
    );
    if let Ok(p) = web_sys::UrlSearchParams::new_with_str(&loc.search().unwrap_or_default()) {
        p.delete("present");
        let q = String::from(p.to_string());
        if !q.is_empty() {
            url += &format!("?{q}");
        }
    }
    url + &loc.hash().unwrap_or_default()
}

/// The QR code of `url` as SVG markup, or why there is none, as an HTML-safe note.
pub fn qr_markup(url: &str, size: u32) -> String {
    match playground::qr::svg(url, size) {
        Ok(svg) => svg,
        // The message is the page's own words (a count), never the link's text.
        Err(why) => format!("<p class=\"muted\">{why}</p>"),
    }
}

/// Offers `text` as a file download named `name`, of type `mime`.
pub fn download(name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    download_url(name, &url);
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// Offers what `url` (a `blob:` or `data:` URL) holds as a file download named `name`.
pub fn download_url(name: &str, url: &str) {
    if let Some(a) = document()
        .create_element("a")
        .ok()
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        a.set_href(url);
        a.set_download(name);
        a.click();
    }
}

/// Downloads the current run's samples as JSON lines.
pub fn export_samples(session: Session) {
    let Some(run) = session.run() else { return };
    let labels = session.views.with_untracked(|v| v.labels.clone());
    let text = export::samples_jsonl(&run.samples(), &labels);
    download("strait-samples.jsonl", "application/x-ndjson", &text);
}

/// Downloads the current run's events as JSON lines.
pub fn export_events(session: Session) {
    let Some(run) = session.run() else { return };
    let text = export::events_jsonl(&run.events_from(0));
    download("strait-events.jsonl", "application/x-ndjson", &text);
}

/// `s` as the link records it: the compare list only in compare mode.
pub fn with_mode(
    mut s: playground::state::PlaygroundState,
    compare: bool,
) -> playground::state::PlaygroundState {
    if !compare {
        s.compare.clear();
    }
    s
}
