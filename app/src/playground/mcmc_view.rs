//! The MCMC view: the chain's current sequence, the latest proposal (the cut point, the
//! regenerated suffix, the acceptance ratio, accept or reject), the chain drawn as a walk
//! over its states with every proposal marked, the running acceptance rate, the chains'
//! distance from P^L step by step (when the exact target is known), and the chain's
//! history.
//!
//! Hooks: `#view-mcmc[data-chains][data-steps]`, `#view-mcmc-proposal[data-accepted]`,
//! `#view-mcmc-walk` (`.walk-proposal.accepted` / `.rejected`, `.walk-path`),
//! `#view-mcmc-accept`, `#view-mcmc-tv[data-first][data-last]`, `.mcmc-step` (history
//! rows).

use super::chart::{Series, XySeries, line_chart, xy_chart};
use super::session::Session;
use crate::format::fmt_p;
use leptos::prelude::*;
use playground::views::{Labels, TvPoint, Walk};
use sampler_core::TokenId;

/// Most history rows drawn (the latest ones).
const MAX_HISTORY: usize = 25;

fn tokens_view(labels: &Labels, kept: &[TokenId], suffix: &[TokenId]) -> impl IntoView + use<> {
    let k: String = kept.iter().map(|&t| labels.label(t)).collect();
    let s: String = suffix.iter().map(|&t| labels.label(t)).collect();
    view! {
        <span class="mono">{k}</span><span class="cut" title="cut point"></span>
        <span class="mono suffix" title="regenerated suffix">{s}</span>
    }
}

/// The MCMC view.
#[component]
pub fn McmcPanel(session: Session) -> impl IntoView {
    let views = session.views;
    let exact = session.exact;
    view! {
        <div id="view-mcmc" class="view"
            data-chains=move || views.with(|v| v.mcmc.chains.len().to_string())
            data-steps=move || views.with(|v| v.mcmc.current().map_or(0, |c| c.history.len()).to_string())>
            <div class="view-head"><h3>"MCMC chain"</h3><super::snapshot::ExportButtons id="view-mcmc" what="MCMC chain view"/></div>
            {move || views.with(|v| {
                let Some(c) = v.mcmc.current() else {
                    return view! { <p class="muted">"Run an mcmc-* sampler: the chain's proposals appear here."</p> }.into_any();
                };
                let labels = &v.labels;
                let last = c.history.last().cloned();
                let rate = c.acceptance_rate().map(|r| format!("{r:.2}")).unwrap_or_else(|| "–".into());
                let start = c.history.len().saturating_sub(MAX_HISTORY);
                view! {
                    <div class="stat">{format!("chain {} of {} · {} generations · acceptance rate {}",
                        // Older chains are dropped from memory; count them too.
                        c.chain + 1, v.mcmc.dropped + v.mcmc.chains.len(), c.history.len(), rate)}</div>
                    <div class="stat">"current state: " <span class="mono">{labels.text(&c.current)}</span></div>
                    {last.map(|s| {
                        let kept = s.proposal.get(..s.cut).unwrap_or(&[]).to_vec();
                        view! {
                            <div id="view-mcmc-proposal" data-accepted=s.accepted.to_string() class="stat">
                                {if s.step == 0 { "initial sample (GCD): ".to_string() } else { format!("proposal {}: cut at {} → ", s.step, s.cut) }}
                                {tokens_view(labels, &kept, &s.suffix)}
                                {(s.step > 0).then(|| format!(" · log ratio {:.3} · accept with {}", s.log_ratio, fmt_p(s.accept_prob)))}
                                " "
                                <b class=if s.accepted { "accept" } else { "reject" }>{if s.accepted { "accepted" } else { "rejected" }}</b>
                            </div>
                        }
                    })}
                    {walk_svg(labels, &c.walk())}
                    {exact.with(|ex| ex.as_ref().and_then(|e| e.as_ref().ok()).map(|e| convergence(&v.mcmc.tv_by_step(e))))}
                    <table>
                        <tr><th>"step"</th><th>"cut"</th><th>"proposal (suffix marked)"</th><th class="num">"accept p"</th><th></th></tr>
                        {c.history[start..].iter().rev().map(|s| {
                            let kept = s.proposal.get(..s.cut).unwrap_or(&[]).to_vec();
                            view! {
                                <tr class="mcmc-step">
                                    <td class="num">{s.step}</td>
                                    <td class="num">{s.cut}</td>
                                    <td>{tokens_view(labels, &kept, &s.suffix)}</td>
                                    <td class="num">{fmt_p(s.accept_prob)}</td>
                                    <td class=if s.accepted { "accept" } else { "reject" }>{if s.accepted { "✓" } else { "✗" }}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </table>
                }.into_any()
            })}
        </div>
    }
}

/// TV(chains' states at step k, P^L) against k: the chains start from masking's
/// distortion and their law approaches P^L as they run.
fn convergence(points: &[TvPoint]) -> impl IntoView + use<> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return ().into_any();
    };
    let chains = last.chains;
    view! {
        <div id="view-mcmc-tv" data-first=first.tv.to_string() data-last=last.tv.to_string()>
            <div class="stat">{format!(
                "the chains' law against P^L: TV {:.3} at their initial GCD samples, {:.3} after step {} ({} chain{} so far)",
                first.tv, last.tv, last.step, chains, if chains == 1 { "" } else { "s" })}</div>
            {(points.len() > 1).then(|| xy_chart(
                "view-mcmc-tv-chart",
                vec![XySeries {
                    label: "TV(chains at step k, P^L)".into(),
                    points: points.iter().map(|p| (p.step as f64, p.tv)).collect(),
                    color: "#7a3fb8",
                }],
                ("step k", "TV", 1.0),
                320.0,
                90.0,
            ))}
        </div>
    }
    .into_any()
}

/// Most states (rows) of the walk drawn; later ones share the last row.
const MAX_STATES: usize = 14;

/// The chain as a walk over its states: one row per sequence (by first appearance), one
/// column per step; the chain's path as a line, each proposal as a dot (filled: accepted,
/// hollow: rejected); and the running acceptance rate as a chart.
fn walk_svg(labels: &Labels, w: &Walk) -> impl IntoView + use<> {
    let (col, row, left) = (22.0, 16.0, 110.0);
    let rows = w.states.len().min(MAX_STATES);
    let width = left + col * w.path.len().max(1) as f64 + 10.0;
    let height = row * rows as f64 + 10.0;
    let y = move |r: usize| 8.0 + r.min(MAX_STATES - 1) as f64 * row;
    let x = move |k: usize| left + 8.0 + k as f64 * col;
    let names = w
        .states
        .iter()
        .take(rows)
        .enumerate()
        .map(|(r, s)| {
            let mut text = labels.text(s);
            if text.chars().count() > 14 {
                text = text.chars().take(13).collect::<String>() + "…";
            }
            view! { <text class="walk-state" x=(left - 6.0).to_string() y=(y(r) + 4.0).to_string() text-anchor="end">{text}</text> }
        })
        .collect_view();
    let path: String = w
        .path
        .iter()
        .enumerate()
        .map(|(k, &r)| format!("{:.1},{:.1} ", x(k), y(r)))
        .collect();
    let dots = w
        .proposals
        .iter()
        .enumerate()
        .map(|(k, &(r, ok))| {
            view! { <circle class="walk-proposal" class:accepted=ok class:rejected=!ok
            cx=x(k).to_string() cy=y(r).to_string() r="4"/> }
        })
        .collect_view();
    let acceptance = w.acceptance.clone();
    view! {
        <div class="trie-scroll">
            <svg id="view-mcmc-walk" width=width.to_string() height=height.to_string()
                viewBox=format!("0 0 {width} {height}") role="img" aria-label="The chain's walk: the state after each step, proposals accepted (filled) or rejected (open)">
                {names}
                <polyline class="walk-path" points=path fill="none"/>
                {dots}
            </svg>
        </div>
        {(acceptance.len() > 1).then(|| line_chart(
            "view-mcmc-accept",
            vec![Series { label: "acceptance rate".into(), values: acceptance, color: "#2c5fd6", class: "line-rate" }],
            None,
            320.0,
            60.0,
        ))}
    }
}
