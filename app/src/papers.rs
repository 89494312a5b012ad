//! The papers' experiments rerun on SmolLM2 (`playground::papers`): each plan's tables as
//! `strait sweep` printed them, drawn from the data stored in the site, and each figure a
//! link that opens that cell in the playground and runs it (same grammar, prompt, sampler,
//! parameters and seed).
//!
//! Hooks: `#papers` (the folded section), `.paper-table`, `a.paper-cell`.

use crate::playground::RunRequest;
use crate::playground::chart::{XySeries, xy_chart};
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

/// Line colours, one per row.
const COLOURS: [&str; 6] = [
    "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860",
];

/// A table whose columns are MCMC steps drawn as curves too: one line per row (a row
/// with one figure, like GCD's at k = 1, drawn flat across the steps).
fn curves(t: &PaperTable) -> Option<impl IntoView + use<>> {
    let ks: Vec<Option<f64>> = t
        .columns
        .iter()
        .map(|c| c.strip_prefix("k=").and_then(|k| k.parse().ok()))
        .collect();
    if t.columns_axis != "steps" || ks.iter().any(Option::is_none) {
        return None;
    }
    let last = ks.iter().flatten().fold(1.0_f64, |a, &b| a.max(b));
    let mut top = 0.0_f64;
    let series: Vec<XySeries> = t
        .rows
        .iter()
        .zip(&t.cells)
        .zip(COLOURS.iter().cycle())
        .filter_map(|((row, cells), &color)| {
            let mut points: Vec<(f64, f64)> = ks
                .iter()
                .zip(cells)
                .filter_map(|(k, c)| Some(((*k)?, c.as_ref()?.value?)))
                .collect();
            if let [(_, y)] = points[..] {
                points.push((last, y));
            }
            points.iter().for_each(|p| top = top.max(p.1));
            (!points.is_empty()).then(|| XySeries {
                label: row.clone(),
                points,
                color,
            })
        })
        .collect();
    // Ids unique on the page: the tables are drawn once each.
    static DRAWN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = DRAWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    (!series.is_empty() && top > 0.0).then(|| {
        xy_chart(
            &format!("paper-curve-{n}"),
            series,
            ("steps k", "estimated KL, nats", top * 1.05),
            420.0,
            200.0,
        )
    })
}

/// One table: rows and columns as printed, each figure a rerun link.
#[component]
fn Table(t: PaperTable) -> impl IntoView {
    let request = use_context::<RunRequest>();
    let chart = curves(&t);
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
            {chart}
        </div>
    }
}
