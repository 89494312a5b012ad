//! The trie view of the rejection samplers (ARS, RSFT, CARS: nodes with p_u, pruned
//! branches, the acceptance rate rising sample after sample) and of ASAp (the same tree
//! holding c̃, updated backward after each sample).
//!
//! Hooks: `#view-trie[data-nodes][data-kind]` (`p_u` or `c̃`), `.trie-node[data-mass]`,
//! `.trie-node .pruned-tok`, `#view-trie-rate[data-rate]`, `#view-trie-accept` (the
//! sparkline).

use super::session::Session;
use super::token_view::bar;
use crate::format::fmt_p;
use leptos::prelude::*;

/// Most nodes drawn (the rest are counted).
const MAX_ROWS: usize = 300;

/// A polyline of values in 0..=1 (`width`×`height` pixels).
pub fn sparkline(
    id: &'static str,
    values: &[f64],
    width: f64,
    height: f64,
) -> impl IntoView + use<> {
    let n = values.len().max(2) - 1;
    let points: String = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "{:.1},{:.1} ",
                i as f64 * width / n as f64,
                height - v.clamp(0.0, 1.0) * height
            )
        })
        .collect();
    view! {
        <svg id=id class="spark" width=width.to_string() height=height.to_string()
            viewBox=format!("0 0 {width} {height}")>
            <rect x="0" y="0" width=width.to_string() height=height.to_string() fill="#f4f5f8"/>
            <polyline points=points fill="none" stroke="#2c5fd6" stroke-width="1.5"/>
        </svg>
    }
}

/// The trie view.
#[component]
pub fn TriePanel(session: Session, asap: Signal<bool>) -> impl IntoView {
    let views = session.views;
    let kind = move || if asap.get() { "c̃" } else { "p_u" };
    view! {
        <div id="view-trie" class="view"
            data-nodes=move || views.with(|v| v.trie.nodes.len().to_string()) data-kind=kind>
            <h3>{move || if asap.get() { "ASAp: the trie of c̃ (expected future grammaticality)" } else { "Trie of p_u (ARS / RSFT / CARS)" }}</h3>
            {move || views.with(|v| {
                let t = &v.trie;
                if t.nodes.is_empty() {
                    return view! { <p class="muted">"The trie fills as a rejection sampler (ars, rsft, cars) or asap runs."</p> }.into_any();
                }
                let latest = t.nodes.values().map(|n| n.last_changed).max().unwrap_or(0);
                let rows = t.nodes.iter().take(MAX_ROWS).map(|(prefix, node)| {
                    let label = match prefix.last() {
                        Some(&tok) => v.labels.label(tok),
                        None => "ε (root)".to_string(),
                    };
                    let pruned: Vec<_> = node.pruned.iter().take(6).map(|(tok, p)| {
                        view! { <span class="pruned-tok" title="pruned: proven non-viable">{format!(" ✗{} ({})", v.labels.label(*tok), fmt_p(*p))}</span> }
                    }).collect();
                    let more = node.pruned_count.saturating_sub(node.pruned.len().min(6));
                    view! {
                        <div class="trie-node" class:pruned=node.mass == 0.0 class:latest=node.last_changed == latest
                            data-mass=node.mass.to_string()
                            style=format!("padding-left:{}rem", prefix.len() as f64 * 0.9)>
                            <span class="mono">{label}</span>
                            <span class="mass">{format!("{} = {}", kind(), fmt_p(node.mass))}</span>
                            " " {bar(node.mass, 4.0, "exact")}
                            <span class="reject">{pruned}{(more > 0).then(|| format!(" +{more} more"))}</span>
                        </div>
                    }
                }).collect_view();
                let hidden = t.nodes.len().saturating_sub(MAX_ROWS);
                view! {
                    <div id="view-trie-rate" class="stat" data-rate=t.rate().to_string()>
                        {format!("{} accepted · {} rejected · acceptance rate {:.2}", t.accepted, t.rejected, t.rate())}
                    </div>
                    {(t.acceptance.len() > 1).then(|| view! {
                        <div class="stat">"acceptance rate after each sample:"</div>
                        {sparkline("view-trie-accept", &t.acceptance, 300.0, 48.0)}
                    })}
                    <div class="trie">{rows}</div>
                    {(hidden > 0).then(|| view! { <div class="stat">{format!("… {hidden} more nodes")}</div> })}
                }.into_any()
            })}
        </div>
    }
}
