//! The SMC view: M particles as rows growing token by token, their normalized weights as
//! bars, the ESS / M after each step plotted against the resampling threshold τ (dashed),
//! and each resampling drawn as lineage lines from the parents (left) to their copies
//! (right).
//!
//! Hooks: `#view-smc[data-particles][data-resamplings]`, `.particle[data-weight]`,
//! `#view-smc-ess[data-ess]`, `#view-smc-lineage line` (one per copy).

use super::chart::{Series, XySeries, line_chart, xy_chart};
use super::session::Session;
use super::token_view::bar;
use crate::format::fmt_p;
use leptos::prelude::*;
use playground::views::LineageStep;

/// Most resampling steps drawn (the latest ones).
const MAX_LINEAGE: usize = 8;

fn lineage_svg(steps: &[LineageStep], m: usize) -> impl IntoView + use<> {
    let col = 56.0;
    let row = 12.0;
    let shown = &steps[steps.len().saturating_sub(MAX_LINEAGE)..];
    let width = col * shown.len() as f64 + 24.0;
    let height = row * m as f64 + 16.0;
    let y = move |i: usize| 10.0 + i as f64 * row;
    let lines = shown
        .iter()
        .enumerate()
        .flat_map(|(k, s)| {
            let x0 = 8.0 + k as f64 * col;
            s.ancestors.iter().enumerate().map(move |(child, &parent)| {
                view! {
                    <line x1=x0.to_string() y1=y(parent).to_string() x2=(x0 + col).to_string()
                        y2=y(child).to_string() stroke="#c67b2d" stroke-width="1"/>
                }
            })
        })
        .collect_view();
    let labels = shown
        .iter()
        .enumerate()
        .map(|(k, s)| {
            view! {
                <text x=(8.0 + k as f64 * col + col / 2.0).to_string() y=(height - 2.0).to_string()
                    font-size="9" text-anchor="middle" fill="#5b6170">{format!("t={}", s.step)}</text>
            }
        })
        .collect_view();
    view! {
        <svg id="view-smc-lineage" width=width.to_string() height=height.to_string()>
            {lines}{labels}
        </svg>
    }
}

/// The SMC view.
#[component]
pub fn SmcPanel(session: Session, threshold: Signal<f64>) -> impl IntoView {
    let views = session.views;
    view! {
        <div id="view-smc" class="view"
            data-particles=move || views.with(|v| v.smc.current().map_or(0, |r| r.rows.len()).to_string())
            data-resamplings=move || views.with(|v| v.smc.current().map_or(0, |r| r.lineage.len()).to_string())>
            <h3>"SMC particles"</h3>
            {move || views.with(|v| {
                let hmm = v.hmm.started().then(|| {
                    let h = &v.hmm;
                    let ll: Vec<(f64, f64)> = h.log_likelihood.iter().enumerate().map(|(i, &l)| ((i + 1) as f64, l)).collect();
                    let (lo, hi) = ll.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.1), b.max(p.1)));
                    // Shifted so the curve's lowest point is 0: the chart shows the climb.
                    let span = (hi - lo).max(1e-9);
                    view! {
                        <div class="stat">"P-GCD: distilling the HMM from the model, EM iteration "
                            {format!("{} of {}", h.done, h.total)} " "
                            <progress id="view-hmm-progress" max=h.total.to_string() value=h.done.to_string()></progress>
                            {h.log_likelihood.last().map(|l| format!(" · log-likelihood per token {l:.4}"))}
                        </div>
                        {(ll.len() > 1).then(|| xy_chart(
                            "view-hmm-ll",
                            vec![XySeries {
                                label: format!("log-likelihood per token − {lo:.3}"),
                                points: ll.iter().map(|&(i, l)| (i, l - lo)).collect(),
                                color: "#1a8a4a",
                            }],
                            ("EM iterations", "nats", span),
                            320.0,
                            90.0,
                        ))}
                    }
                });
                let Some(r) = v.smc.current() else {
                    return view! {
                        {hmm}
                        <p class="muted">"Run an SMC sampler (awrs-smc, wrs-smc, twisted-smc, smc-gcd, p-gcd-smc): its particles appear here."</p>
                    }.into_any();
                };
                let m = r.rows.len();
                let ess = r.ess.last().map(|e| e.1);
                let ess_series: Vec<f64> = r.ess.iter().map(|e| e.1 / m.max(1) as f64).collect();
                view! {
                    {hmm}
                    <div id="view-smc-ess" class="stat" data-ess=ess.map(|e| e.to_string())>
                        {format!("run {} of {} · {} particles · ESS {} · {} resamplings",
                            r.run + 1, v.smc.runs.len(), m,
                            ess.map(|e| format!("{e:.2}")).unwrap_or_else(|| "–".into()),
                            r.lineage.len())}
                        {r.log_evidence.map(|e| format!(" · log evidence {e:.3}"))}
                    </div>
                    {(ess_series.len() > 1).then(|| line_chart(
                        "view-smc-ess-line",
                        vec![Series { label: "ESS / M".into(), values: ess_series.clone(), color: "#2c5fd6", class: "line-ess" }],
                        Some(threshold.get_untracked()),
                        320.0,
                        64.0,
                    ))}
                    <table>
                        <tr><th>"#"</th><th>"from"</th><th>"tokens"</th><th class="num">"weight"</th><th></th></tr>
                        {r.rows.iter().enumerate().map(|(i, p)| view! {
                            <tr class="particle" class:dim=!p.active && p.weight == 0.0 data-weight=p.weight.to_string()>
                                <td class="num">{i}</td>
                                <td class="num">{p.parent.map(|a| a.to_string()).unwrap_or_default()}</td>
                                <td class="mono">{v.labels.text(&p.tokens)}</td>
                                <td class="num">{fmt_p(p.weight)}</td>
                                <td>{bar(p.weight, 6.0, "weight")}</td>
                            </tr>
                        }).collect_view()}
                    </table>
                    {(!r.lineage.is_empty()).then(|| view! {
                        <div class="stat">"resampling lineage (parent → copy):"</div>
                        {lineage_svg(&r.lineage, m)}
                    })}
                }.into_any()
            })}
        </div>
    }
}
