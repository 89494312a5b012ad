//! A disclosure (`<details>`) that remembers whether it was left open, per browser
//! (`localStorage["strait.open.<id>"]`): engineering details stay folded for a newcomer
//! and open for whoever opened them.

use leptos::prelude::*;

fn key(id: &str) -> String {
    format!("strait.open.{id}")
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Whether the disclosure `id` was left open (folded when nothing is stored).
pub fn remembered_open(id: &str) -> bool {
    storage()
        .and_then(|s| s.get_item(&key(id)).ok().flatten())
        .is_some_and(|v| v == "1")
}

/// A `<details id=id>` with its summary line, open as it was left.
#[component]
pub fn Disclosure(id: &'static str, summary: &'static str, children: Children) -> impl IntoView {
    view! {
        <details id=id class="disclosure" open=remembered_open(id)
            on:toggle=move |e| {
                use wasm_bindgen::JsCast;
                let open = e
                    .target()
                    .and_then(|t| t.dyn_into::<web_sys::HtmlDetailsElement>().ok())
                    .is_some_and(|d| d.open());
                if let Some(s) = storage() {
                    let _ = s.set_item(&key(id), if open { "1" } else { "0" });
                }
            }>
            <summary>{summary}</summary>
            {children()}
        </details>
    }
}
