//! The results view: distinct outputs with counts, log P and the empirical distribution
//! beside the exact P^L (when the language is finite and the model a toy), the TV
//! distance, the running acceptance rate, LM calls per valid sample, and KL(samples‖P^L)
//! against LM calls.
//!
//! Hooks: `#view-results[data-samples][data-distinct]`, `.output-row[data-text][data-count]
//! [data-empirical][data-exact]`, `#view-results-tv[data-tv]`, `#view-results-exact-note`.

use super::chart::{XySeries, xy_chart};
use super::session::Session;
use super::token_view::bar;
use crate::format::fmt_p;
use leptos::prelude::*;
use playground::views::{Labels, ResultsView};
use sampler_core::TokenId;
use sampler_core::exact::ExactDistribution;
use std::collections::HashMap;

/// Most rows listed.
const MAX_ROWS: usize = 24;

/// One row of the distribution table: an output seen, or one the exact target lists.
#[derive(Clone, Debug, PartialEq)]
pub struct DistRow {
    /// Its text.
    pub text: String,
    /// Times drawn.
    pub count: u64,
    /// Its share of the samples' weight.
    pub empirical: f64,
    /// P^L, when known.
    pub exact: Option<f64>,
    /// log P, when known.
    pub logp: Option<f64>,
    /// Whether it is in the language (when drawn).
    pub valid: Option<bool>,
}

/// The rows: every output drawn and every sequence of the exact target, by the larger
/// of the two probabilities.
pub fn dist_rows(
    r: &ResultsView,
    exact: Option<&ExactDistribution>,
    labels: &Labels,
) -> Vec<DistRow> {
    let total = r.total_weight;
    let mut rows: Vec<DistRow> = Vec::new();
    let mut seen: HashMap<Vec<TokenId>, usize> = HashMap::new();
    for o in &r.outputs {
        seen.insert(o.tokens.clone(), rows.len());
        rows.push(DistRow {
            text: o.text.clone(),
            count: o.count,
            empirical: if total > 0.0 { o.weight / total } else { 0.0 },
            exact: exact.map(|e| e.index_of(&o.tokens).map_or(0.0, |i| e.entries[i].p)),
            logp: Some(o.logp),
            valid: Some(o.valid),
        });
    }
    if let Some(e) = exact {
        for entry in &e.entries {
            if !seen.contains_key(&entry.tokens) {
                rows.push(DistRow {
                    text: labels.text(&entry.tokens),
                    count: 0,
                    empirical: 0.0,
                    exact: Some(entry.p),
                    logp: Some(entry.logp),
                    valid: Some(true),
                });
            }
        }
    }
    rows.sort_by(|a, b| {
        let ka = a.empirical.max(a.exact.unwrap_or(0.0));
        let kb = b.empirical.max(b.exact.unwrap_or(0.0));
        kb.total_cmp(&ka).then_with(|| a.text.cmp(&b.text))
    });
    rows
}

/// TV(empirical, P^L), samples outside the language counted in full.
pub fn tv(r: &ResultsView, exact: &ExactDistribution) -> Option<f64> {
    (r.total_weight > 0.0).then(|| playground::exact::tv(&r.empirical(), exact))
}

/// The distribution table (shared with compare mode).
pub fn dist_table(rows: Vec<DistRow>, exact_known: bool) -> impl IntoView {
    let hidden = rows.len().saturating_sub(MAX_ROWS);
    view! {
        <table class="dist">
            <tr><th>"output"</th><th class="num">"count"</th><th>"empirical"</th>
                {exact_known.then(|| view! { <th>"exact P^L"</th> })}<th class="num">"log P"</th></tr>
            {rows.into_iter().take(MAX_ROWS).map(|d| view! {
                <tr class="output-row" class:reject=d.valid == Some(false) data-text=d.text.clone() data-count=d.count.to_string()
                    data-empirical=d.empirical.to_string() data-exact=d.exact.map(|e| e.to_string())>
                    <td class="mono">{if d.text.is_empty() { "(empty)".to_string() } else { d.text.clone() }}</td>
                    <td class="num">{d.count}</td>
                    <td>{bar(d.empirical, 5.0, "")}" "{fmt_p(d.empirical)}</td>
                    {exact_known.then(|| view! { <td>{bar(d.exact.unwrap_or(0.0), 5.0, "exact")}" "{fmt_p(d.exact.unwrap_or(0.0))}</td> })}
                    <td class="num">{d.logp.map(|l| format!("{l:.2}")).unwrap_or_default()}</td>
                </tr>
            }).collect_view()}
        </table>
        {(hidden > 0).then(|| view! { <div class="stat">{format!("… {hidden} more outputs")}</div> })}
    }
}

/// The results view.
#[component]
pub fn ResultsPanel(session: Session) -> impl IntoView {
    let views = session.views;
    let exact = session.exact;
    view! {
        <div id="view-results" class="view"
            data-samples=move || views.with(|v| v.results.samples.to_string())
            data-distinct=move || views.with(|v| v.results.outputs.len().to_string())>
            <div class="view-head"><h3>"Results"</h3><super::snapshot::ExportButtons id="view-results" what="results view"/></div>
            {move || views.with(|v| exact.with(|ex| {
                let r = &v.results;
                let exact_dist = ex.as_ref().and_then(|e| e.as_ref().ok());
                let note = ex.as_ref().and_then(|e| e.as_ref().err()).cloned();
                let rows = dist_rows(r, exact_dist, &v.labels);
                let tv_now = exact_dist.and_then(|e| tv(r, e));
                let kl: Vec<(u64, f64)> = r.kl.iter().filter(|p| p.kl.is_finite()).map(|p| (p.lm_calls, p.kl)).collect();
                view! {
                    <div class="stat">
                        {format!("{} samples ({} valid) · {} LM calls", r.samples, r.valid, r.counters.lm_calls)}
                        {r.acceptance_rate().map(|a| format!(" · acceptance rate {a:.2}"))}
                        {r.lm_calls_per_valid().map(|c| format!(" · {c:.1} LM calls per valid sample"))}
                        {r.kl_now().map(|k| format!(" · KL(samples‖P^L) {}", if k.is_finite() { format!("{k:.3}") } else { "∞".into() }))}
                    </div>
                    {tv_now.map(|t| view! {
                        <div id="view-results-tv" class="stat" data-tv=t.to_string()>
                            <b>{format!("TV(empirical, exact P^L) = {t:.3}")}</b>
                        </div>
                    })}
                    {note.map(|n| view! { <div id="view-results-exact-note" class="stat">{n}</div> })}
                    {(r.samples > 0 || exact_dist.is_some()).then(|| dist_table(rows, exact_dist.is_some()))}
                    {(kl.len() > 1).then(move || xy_chart(
                        "view-results-kl",
                        vec![XySeries {
                            label: "KL(samples ‖ P^L) against LM calls".into(),
                            points: kl.iter().map(|&(x, k)| (x as f64, k)).collect(),
                            color: "#8a1c1c",
                        }],
                        ("LM calls", "nats (capped at 5)", 5.0),
                        320.0,
                        96.0,
                    ))}
                }
            }))}
        </div>
    }
}
