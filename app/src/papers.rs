//! The papers' experiments rerun on SmolLM2 (`playground::papers`): each plan's tables as
//! `strait sweep` printed them, drawn from the data stored in the site, and each figure a
//! link that opens that cell in the playground and runs it (same grammar, prompt, sampler,
//! parameters and seed).
//!
//! Hooks: `#papers` (the folded section), `.paper-table`, `a.paper-cell`.

use crate::playground::RunRequest;
use leptos::prelude::*;
use playground::papers::{PaperResults, PaperTable};

/// The section's body: what the tables are, then one block per plan.
#[component]
pub fn Papers() -> impl IntoView {
    let results = playground::papers::results();
    view! {
        <p class="papers-intro">
            "The papers make their case on real grammars with 7–8 billion-parameter models. "
            "Here are their experiments rerun with the 135-million-parameter model of this page, "
            "scaled down to fit a two-core machine (fewer samples, a lower cap on generations). "
            "Click a figure to rerun that cell here with the same seed."
        </p>
        {results.into_iter().map(|r| view! { <PlanResults r=r/> }).collect_view()}
    }
}

/// One plan: its title, how far its sweep got, and its tables.
#[component]
fn PlanResults(r: PaperResults) -> impl IntoView {
    let progress = if r.finished == r.cells {
        format!("All {} cells of {} finished.", r.cells, r.plan)
    } else {
        format!(
            "{} of {} cells of {} finished so far; blank cells have not run yet.",
            r.finished, r.cells, r.plan
        )
    };
    view! {
        <h3>{r.title}</h3>
        <p class="papers-progress">{progress}</p>
        {r.tables.into_iter().map(|t| view! { <Table t=t/> }).collect_view()}
    }
}

/// One table: rows and columns as printed, each figure a rerun link.
#[component]
fn Table(t: PaperTable) -> impl IntoView {
    let request = use_context::<RunRequest>();
    let columns = t.columns.clone();
    let rows = t.rows.into_iter().zip(t.cells).map(move |(row, cells)| {
        let cells = cells.into_iter().map(|cell| match cell {
            Some(c) => match c.link {
                Some(link) => {
                    let label = format!("Rerun {row}: {}", c.text);
                    let href = format!("#{link}");
                    view! {
                        <td><a class="paper-cell" href=href aria-label=label
                            on:click=move |e| {
                                let state = playground::permalink::decode(&link).ok();
                                if let (Some(RunRequest(r)), Some(state)) = (request, state) {
                                    e.prevent_default();
                                    r.set(Some(state));
                                }
                            }>{c.text}</a></td>
                    }
                    .into_any()
                }
                None => view! { <td>{c.text}</td> }.into_any(),
            },
            None => view! { <td></td> }.into_any(),
        });
        view! { <tr><th scope="row">{row.clone()}</th>{cells.collect_view()}</tr> }
    });
    view! {
        <div class="paper-table-wrap">
            <table class="paper-table">
                <caption>{t.title}</caption>
                <thead><tr>
                    <th scope="col">{t.rows_axis}</th>
                    {columns.into_iter().map(|c| view! { <th scope="col">{c}</th> }).collect_view()}
                </tr></thead>
                <tbody>{rows.collect_view()}</tbody>
            </table>
            <p class="paper-measure">{t.measure}</p>
        </div>
    }
}
