//! The SMC view: M particles as rows growing token by token, their normalized weights as
//! bars, the ESS / M after each step plotted against the resampling threshold τ (dashed),
//! and the run drawn as lanes across steps: a dot per particle and step, sized and shaded
//! by weight, with each resampling's copies drawn as lineage lines from the parents
//! (left) to their copies (right).
//!
//! Hooks: `#view-smc[data-particles][data-resamplings]`, `.particle[data-weight]`,
//! `#view-smc-ess[data-ess]`, `#view-smc-lanes[data-columns]` (`.lane-cell[data-weight]`),
//! `#view-smc-lineage line` (one per copy).

use super::chart::{Series, XySeries, line_chart, xy_chart};
use super::session::Session;
use super::token_view::bar;
use crate::format::fmt_p;
use leptos::prelude::*;
use playground::views::{Labels, LaneLink, Lanes};

/// Most steps drawn as lanes (the latest ones).
const MAX_COLUMNS: usize = 24;
/// Most particles drawn as lanes (beyond it the table and the ESS chart carry the run).
const MAX_LANES: usize = 32;

/// The run as lanes (`SmcRunView::lanes`): a column per step, a lane per particle, each
/// cell a dot sized and shaded by the particle's normalized weight with the token it drew
/// beside it (hollow: it drew nothing, finished or dead); grey links continue a particle,
/// orange links are resampling's copies (`#view-smc-lineage`), parent left, copy right.
fn lanes_svg(lanes: &Lanes, labels: &Labels) -> impl IntoView + use<> {
    let (col, row, top, left) = (46.0, 18.0, 12.0, 22.0);
    let cols = lanes.columns.len()
        + usize::from(
            lanes
                .links
                .iter()
                .any(|l| l.column + 1 == lanes.columns.len()),
        );
    let width = left + col * cols.max(1) as f64 + 10.0;
    let height = top + row * lanes.lanes as f64 + 14.0;
    let x = move |c: usize| left + 8.0 + c as f64 * col;
    let y = move |i: usize| top + i as f64 * row;
    let link = |l: &LaneLink| {
        view! {
            <line x1=x(l.column).to_string() y1=y(l.from_lane).to_string()
                x2=x(l.column + 1).to_string() y2=y(l.to_lane).to_string()
                stroke=if l.resampled { "#c67b2d" } else { "#c9ced8" } stroke-width="1.2"/>
        }
    };
    let continuing = lanes
        .links
        .iter()
        .filter(|l| !l.resampled)
        .map(link)
        .collect_view();
    let copies = lanes
        .links
        .iter()
        .filter(|l| l.resampled)
        .map(link)
        .collect_view();
    let max_w = lanes
        .columns
        .iter()
        .flat_map(|c| c.cells.iter().map(|cell| cell.1))
        .fold(0.0f64, f64::max)
        .max(1e-12);
    let cells = lanes
        .columns
        .iter()
        .enumerate()
        .flat_map(|(c, column)| {
            column.cells.iter().enumerate().map(move |(i, &(token, w))| (c, column.step, i, token, w))
        })
        .map(|(c, step, i, token, w)| {
            let label = token.map(|t| labels.label(t)).unwrap_or_default();
            let r = 2.0 + 5.0 * (w / max_w).sqrt();
            let opacity = 0.2 + 0.8 * w / max_w;
            let title = format!("step {step}, particle {i}: {} · weight {}", if label.is_empty() { "nothing drawn".to_string() } else { format!("{label:?}") }, fmt_p(w));
            view! {
                <g class="lane-cell" data-weight=w.to_string()>
                    <title>{title}</title>
                    {if token.is_some() {
                        view! { <circle cx=x(c).to_string() cy=y(i).to_string() r=r.to_string() fill="#2c5fd6" fill-opacity=opacity.to_string()/> }.into_any()
                    } else {
                        view! { <circle cx=x(c).to_string() cy=y(i).to_string() r="2.5" fill="none" stroke="#9aa1ad"/> }.into_any()
                    }}
                    <text x=(x(c) + 7.0).to_string() y=(y(i) + 3.5).to_string() font-size="9" class="mono" fill="#2b2f38">{label}</text>
                </g>
            }
        })
        .collect_view();
    let steps = lanes
        .columns
        .iter()
        .enumerate()
        .map(|(c, column)| view! {
            <text x=x(c).to_string() y=(height - 2.0).to_string() font-size="9" text-anchor="middle" fill="#5b6170">{format!("t={}", column.step)}</text>
        })
        .collect_view();
    let particles = (0..lanes.lanes)
        .map(|i| view! { <text x="2" y=(y(i) + 3.5).to_string() font-size="9" fill="#5b6170">{i}</text> })
        .collect_view();
    view! {
        <svg id="view-smc-lanes" width=width.to_string() height=height.to_string()
            viewBox=format!("0 0 {width} {height}") role="img" aria-label="The particles: a lane per particle, a column per step, the weight as each cell's bar, resampling's copies as links" data-columns=lanes.columns.len().to_string() data-hidden=lanes.hidden.to_string()>
            <g>{continuing}</g>
            <g id="view-smc-lineage">{copies}</g>
            {cells}{steps}{particles}
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
            <div class="view-head"><h3>"SMC particles"</h3><super::snapshot::ExportButtons id="view-smc" what="SMC particles view"/></div>
            {move || views.with(|v| {
                let hmm = v.hmm.started().then(|| {
                    let h = &v.hmm;
                    let ll: Vec<(f64, f64)> = h.log_likelihood.iter().enumerate().map(|(i, &l)| ((i + 1) as f64, l)).collect();
                    let (lo, hi) = ll.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.1), b.max(p.1)));
                    // Shifted so the curve's lowest point is 0: the chart shows the climb.
                    let span = (hi - lo).max(1e-9);
                    view! {
                        <div id="view-hmm" class="stat" data-engine=h.engine.clone()>"P-GCD: distilling the HMM from the model, EM iteration "
                            {format!("{} of {}", h.done, h.total)}
                            {(!h.engine.is_empty()).then(|| format!(" on {}", h.engine))} " "
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
                    {if m <= MAX_LANES {
                        view! {
                            <div class="stat">{format!("particles across steps (dot: weight; orange: resampling, parent → copy{})",
                                if r.steps.len() > MAX_COLUMNS { format!("; the last {MAX_COLUMNS} of {} steps", r.steps.len()) } else { String::new() })}</div>
                            {lanes_svg(&r.lanes(MAX_COLUMNS), &v.labels)}
                        }.into_any()
                    } else {
                        view! { <div class="stat muted">{format!("lanes are drawn for at most {MAX_LANES} particles; this run has {m}")}</div> }.into_any()
                    }}
                }.into_any()
            })}
        </div>
    }
}
