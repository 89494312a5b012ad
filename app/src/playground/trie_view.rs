//! The trie view of the rejection samplers (ARS, RSFT, CARS: nodes shaded by p_u, pruned
//! branches greyed and folded, the latest generation's path highlighted, the acceptance
//! rate and p_ε plotted sample after sample) and of ASAp (the same tree holding c̃, updated
//! backward after each sample). The layout is the `playground` crate's
//! ([`playground::views::TrieDrawing`]); this file only draws it as SVG.
//!
//! Hooks: `#view-trie[data-nodes][data-kind]` (`p_u` or `c̃`), `#view-trie-svg`,
//! `.trie-node[data-mass]` (an SVG group per drawn node; `.dead`, `.on-path`),
//! `.trie-edge`, `#view-trie-rate[data-rate]`, `#view-trie-accept` (the chart of the
//! acceptance rate and p_ε).

use super::chart::{Series, line_chart};
use super::session::Session;
use crate::format::fmt_p;
use leptos::prelude::*;
use playground::views::{DrawnNode, TrieDrawing};

/// Most nodes drawn (the path the sampler is on is always drawn; the rest are folded).
const MAX_NODES: usize = 120;

/// The trie view.
#[component]
pub fn TriePanel(session: Session, asap: Signal<bool>) -> impl IntoView {
    let views = session.views;
    let kind = move || if asap.get() { "c̃" } else { "p_u" };
    view! {
        <div id="view-trie" class="view"
            data-nodes=move || views.with(|v| v.trie.nodes.len().to_string()) data-kind=kind>
            <div class="view-head"><h3>{move || if asap.get() { "ASAp: the trie of c̃ (expected future grammaticality)" } else { "Trie of p_u (ARS / RSFT / CARS)" }}</h3><super::snapshot::ExportButtons id="view-trie" what="trie view"/></div>
            {move || views.with(|v| {
                let t = &v.trie;
                if t.nodes.is_empty() {
                    return view! { <p class="muted">"The trie fills as a rejection sampler (ars, rsft, cars) or asap runs."</p> }.into_any();
                }
                let drawing = t.drawing(&v.labels, MAX_NODES);
                let root = if asap.get_untracked() { "c̃(ε)" } else { "p_ε" };
                view! {
                    <div id="view-trie-rate" class="stat" data-rate=t.rate().to_string()>
                        {format!("{} accepted · {} rejected · acceptance rate {:.2}", t.accepted, t.rejected, t.rate())}
                    </div>
                    {(t.acceptance.len() > 1).then(|| line_chart(
                        "view-trie-accept",
                        vec![
                            Series { label: "acceptance rate".into(), values: t.acceptance.clone(), color: "#2c5fd6", class: "line-rate" },
                            Series { label: root.into(), values: t.p_eps.clone(), color: "#1a8a4a", class: "line-p-eps" },
                        ],
                        None,
                        320.0,
                        72.0,
                    ))}
                    {tree(&drawing, kind())}
                    {(drawing.folded > 0).then(|| view! {
                        <div class="stat">{format!("{} more nodes folded into the ones drawn (+n beside them)", drawing.folded)}</div>
                    })}
                }.into_any()
            })}
        </div>
    }
}

/// The tree as SVG: edges, then one group per node (a disc whose area and shade follow its
/// mass, its token, its mass as text, and a tooltip naming what was pruned at it).
fn tree(d: &TrieDrawing, kind: &'static str) -> impl IntoView + use<> {
    let edges = d
        .nodes
        .iter()
        .filter_map(|n| n.parent.map(|p| (&d.nodes[p], n)))
        .map(|(p, n)| {
            view! {
                <line class="trie-edge" class:on-path=n.on_path class:dead=n.dead
                    x1=p.x.to_string() y1=p.y.to_string() x2=n.x.to_string() y2=n.y.to_string()/>
            }
        })
        .collect_view();
    let nodes = d.nodes.iter().map(|n| node(n, kind)).collect_view();
    view! {
        <div class="trie-scroll">
            <svg id="view-trie-svg" width=d.width.to_string() height=d.height.to_string()
                viewBox=format!("0 0 {} {}", d.width, d.height) role="img" aria-label="The trie of prefixes drawn so far, each node with its remaining mass; dead prefixes struck out">
                {edges}
                {nodes}
            </svg>
        </div>
    }
}

fn node(n: &DrawnNode, kind: &'static str) -> impl IntoView + use<> {
    let mass = n.mass.clamp(0.0, 1.0);
    let r = 3.0 + 6.0 * mass.sqrt();
    let mut title = format!("{} = {}", kind, fmt_p(n.mass));
    if n.pruned_count > 0 {
        let top: Vec<String> = n
            .pruned
            .iter()
            .map(|(t, p)| format!("{t} ({})", fmt_p(*p)))
            .collect();
        title.push_str(&format!(
            "\npruned here (proven non-viable): {} token{}: {}",
            n.pruned_count,
            if n.pruned_count == 1 { "" } else { "s" },
            top.join(", ")
        ));
    }
    let label = if n.folded > 0 {
        format!("{} +{}", n.label, n.folded)
    } else {
        n.label.clone()
    };
    view! {
        <g class="trie-node" class:dead=n.dead class:on-path=n.on_path data-mass=n.mass.to_string()
            transform=format!("translate({:.1},{:.1})", n.x, n.y)>
            <title>{title}</title>
            <circle r=format!("{r:.1}") fill-opacity=format!("{:.2}", 0.15 + 0.85 * mass)/>
            <text class="trie-label" x=format!("{:.1}", r + 3.0) y="-2">{label}</text>
            <text class="trie-mass" x=format!("{:.1}", r + 3.0) y="9">{fmt_p(n.mass)}</text>
            {(n.pruned_count > 0).then(|| view! { <text class="pruned-tok" x="-4" y="-7">{"✗".repeat(n.pruned_count.min(3))}</text> })}
        </g>
    }
}
