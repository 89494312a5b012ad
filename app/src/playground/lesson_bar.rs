//! The lessons on the page: the list of every lesson (links `#lesson=<id>`), and the bar
//! of the open lesson — its step's words, Back / Next (also ← / → and Page Up / Page Down,
//! as presentation clickers send them). The lessons
//! themselves (words, presets, what to look at) are the `playground` crate's
//! [`playground::lessons`].
//!
//! Hooks: `#lessons a[href]`, `#lesson[data-lesson][data-step]`, `#lesson-words`,
//! `#lesson-back`, `#lesson-next`, `#lesson-close`.

use leptos::prelude::*;
use playground::lessons::{self, Place};

/// Whether the key event came from a field that uses the arrow keys itself.
pub fn in_text_field(e: &web_sys::KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    e.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|el| {
            matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT")
                || el.closest("[contenteditable]").ok().flatten().is_some()
        })
}

/// Every lesson as a link, the open one marked.
#[component]
pub fn LessonList(place: RwSignal<Option<Place>>) -> impl IntoView {
    view! {
        <nav id="lessons" class="lessons" aria-label="Lessons">
            <h2>"Lessons"</h2>
            <ol class="lesson-list">
                {lessons::lessons().iter().enumerate().map(|(i, l)| {
                    let current = move || place.get().is_some_and(|p| p.lesson == i);
                    view! {
                        <li class:current=current>
                            <a href=format!("#lesson={}", l.id)
                                aria-current=move || current().then_some("step")>{l.title}</a>
                            <span class="lesson-summary">{l.summary}</span>
                        </li>
                    }
                }).collect_view()}
            </ol>
        </nav>
    }
}

/// The open lesson's bar.
#[component]
pub fn LessonBar(
    place: RwSignal<Option<Place>>,
    on_go: Callback<Place>,
    on_close: Callback<()>,
) -> impl IntoView {
    move || {
        place.get().map(|p| {
            let lesson = p.lesson();
            let step = p.step();
            let (back, next) = (p.back(), p.next());
            view! {
                <section id="lesson" class="lesson" data-lesson=lesson.id
                    data-step=(p.step + 1).to_string() aria-label="Lesson">
                    <div class="lesson-head">
                        <h2 class="lesson-title">{format!("{}. {}", p.lesson + 1, lesson.title)}</h2>
                        <span class="muted lesson-meta">{format!("step {} of {} · {}", p.step + 1, lesson.steps.len(), lesson.paper)}</span>
                        <button id="lesson-close" class="secondary small" aria-label="Leave the lesson"
                            on:click=move |_| on_close.run(())>"×"</button>
                    </div>
                    <p id="lesson-words" class="lesson-words" aria-live="polite">{step.words}</p>
                    <div class="lesson-nav">
                        <button id="lesson-back" class="secondary" disabled=back.is_none()
                            on:click=move |_| { if let Some(b) = back { on_go.run(b) } }>"← Back"</button>
                        <button id="lesson-next" disabled=next.is_none()
                            on:click=move |_| { if let Some(n) = next { on_go.run(n) } }>
                            {if next.is_some_and(|n| n.lesson != p.lesson) { "Next lesson →" } else { "Next →" }}
                        </button>
                        <span class="shortcut"><kbd>"←"</kbd>" "<kbd>"→"</kbd></span>
                    </div>
                </section>
            }
        })
    }
}
