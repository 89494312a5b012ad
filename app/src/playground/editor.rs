//! The grammar editor: a textarea with a line-number gutter, the grammar kind (detected,
//! switchable) and the compile error marked at its line and column.
//!
//! Hooks: `#pg-grammar` (the text), `#pg-kind` (`auto` or a kind), `#pg-kind-detected`,
//! `#pg-grammar-error[data-line][data-column]`, `.gutter .ln.err` (the marked line).

use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// A grammar error at a 1-based line and column (0 when unknown).
#[derive(Clone, Debug, PartialEq)]
pub struct GrammarErr {
    /// Line of the fault, from 1.
    pub line: usize,
    /// Column of the fault (characters), from 1.
    pub column: usize,
    /// What is wrong, one line.
    pub message: String,
}

/// The character offset of a 1-based (line, column) in `text`.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut off = 0;
    for (i, l) in text.split('\n').enumerate() {
        if i + 1 == line {
            return off + column.saturating_sub(1).min(l.chars().count());
        }
        off += l.chars().count() + 1;
    }
    off
}

/// Selects the error's position in the textarea.
fn go_to(line: usize, column: usize) {
    let Some(el) = document()
        .get_element_by_id("pg-grammar")
        .and_then(|e| e.dyn_into::<web_sys::HtmlTextAreaElement>().ok())
    else {
        return;
    };
    let text = el.value();
    let at = offset_of(&text, line, column) as u32;
    let _ = el.focus();
    let _ = el.set_selection_range(at, at + 1);
}

/// The editor. `kind` holds `auto` or a kind key; `detected` names what auto picked.
#[component]
pub fn GrammarEditor(
    text: RwSignal<String>,
    kind: RwSignal<String>,
    detected: Signal<String>,
    error: Signal<Option<GrammarErr>>,
    kinds: &'static [(&'static str, &'static str)],
) -> impl IntoView {
    let lines = move || text.with(|t| t.split('\n').count()).max(1);
    let err_line = move || error.with(|e| e.as_ref().map(|e| e.line).unwrap_or(0));
    view! {
        <div class="editor">
            <div class="editor-head">
                <label for="pg-grammar">"Grammar"</label>
                <label>" kind "
                    <select id="pg-kind" on:change=move |e| kind.set(event_target_value(&e))
                        prop:value=move || kind.get()>
                        <option value="auto">"auto"</option>
                        {kinds.iter().map(|(k, name)| view! { <option value=*k>{*name}</option> }).collect_view()}
                    </select>
                </label>
                <span id="pg-kind-detected" class="muted" data-kind=move || detected.get()>
                    {move || if kind.get() == "auto" { format!("detected: {}", detected.get()) } else { String::new() }}
                </span>
            </div>
            <div class="editor-body">
                <div class="gutter" aria-hidden="true">
                    {move || (1..=lines()).map(|i| view! {
                        <div class="ln" class:err=move || err_line() == i>{i}</div>
                    }).collect_view()}
                </div>
                <textarea id="pg-grammar" spellcheck="false" wrap="off"
                    rows=move || lines().clamp(2, 24).to_string()
                    prop:value=move || text.get()
                    on:input=move |e| text.set(event_target_value(&e))></textarea>
            </div>
            {move || error.get().map(|e| {
                let (line, column) = (e.line, e.column);
                view! {
                    <div id="pg-grammar-error" class="error" role="alert"
                        data-line=line.to_string() data-column=column.to_string()>
                        {(line > 0).then(|| view! {
                            <button class="link" on:click=move |_| go_to(line, column)>
                                {format!("line {line}, column {column}")}
                            </button>
                            ": "
                        })}
                        {e.message.clone()}
                    </div>
                }
            })}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::offset_of;

    #[test]
    fn offsets_count_characters_per_line() {
        let t = "ab\ncdé\nf";
        assert_eq!(offset_of(t, 1, 1), 0);
        assert_eq!(offset_of(t, 2, 3), 5);
        assert_eq!(offset_of(t, 3, 1), 7);
        // Past the end of a line: its end.
        assert_eq!(offset_of(t, 1, 9), 2);
    }
}
