//! The token view: at the latest step, the most likely next tokens as a bar chart of their
//! probabilities (masked ones grey and struck through), the mass Z the mask kept as a
//! filled fraction, and the token drawn. For P-GCD, the guide's proposal beside the model's
//! law (P and q per token), its weight, and the guide's mass per step.
//!
//! Hooks: `#view-token[data-steps]`, `.top-token[data-allowed]`, `#view-token-z`,
//! `#view-token-drawn`, `#view-token-guide[data-guide-mass]` (`.guide-token[data-q]`,
//! `#view-token-guide-mass`).

use super::chart::{Series, line_chart};
use super::session::Session;
use crate::format::fmt_p;
use leptos::prelude::*;
use playground::views::{GuideView, TopToken};
use sampler_core::TokenId;

/// A horizontal bar `p` of `width_rem` wide.
pub fn bar(p: f64, width_rem: f64, class: &'static str) -> impl IntoView {
    let w = (p.clamp(0.0, 1.0) * width_rem).max(if p > 0.0 { 0.08 } else { 0.0 });
    view! { <span class=format!("bar {class}") style=format!("width:{w:.2}rem")></span> }
}

/// The token view.
#[component]
pub fn TokenPanel(session: Session) -> impl IntoView {
    let views = session.views;
    view! {
        <div id="view-token" class="view" data-steps=move || views.with(|v| v.token.steps.to_string())>
            <div class="view-head"><h3>"Next token"</h3><super::snapshot::ExportButtons id="view-token" what="next-token view"/></div>
            {move || views.with(|v| {
                let t = &v.token;
                if t.steps == 0 {
                    return view! { <p class="muted">"Run a sampler: each step's top tokens appear here."</p> }.into_any();
                }
                let drawn = t.drawn.clone();
                let drawn_id = drawn.as_ref().map(|d| d.token);
                let seq = v.labels.text(&t.sequence);
                view! {
                    <div class="stat">
                        {format!("step {} · position {}", t.steps, t.position)}
                        {(t.particle > 0).then(|| format!(" · particle {}", t.particle))}
                    </div>
                    <div class="stat">"sequence: " <span class="mono">{seq}</span></div>
                    {top_bars(&t.top, drawn_id)}
                    <div id="view-token-z" class="stat" data-z=t.kept_mass.map(|z| z.to_string())>
                        {match t.kept_mass {
                            Some(z) => view! {
                                {z_bar(z)}
                                " " {format!("Z = {} (the mass the mask kept; masking renormalizes by it)", fmt_p(z))}
                            }.into_any(),
                            None => "no mask at this step (Z not applicable)".into_any(),
                        }}
                    </div>
                    {drawn.map(|d| view! {
                        <div id="view-token-drawn" class="stat">"drawn: "
                            <span class="mono drawn">{d.label}</span>
                            {format!(" with P = {}", fmt_p(d.p))}
                        </div>
                    })}
                    {t.guide.as_ref().map(|g| guide_view(g, &t.guide_steps))}
                }.into_any()
            })}
        </div>
    }
}

/// Width of a probability-1 bar, in pixels.
const BAR_W: f64 = 220.0;
/// Room for the token's text left of the bars.
const LABEL_W: f64 = 90.0;

/// The top next tokens as horizontal bars of P(a|u): masked ones grey and struck through,
/// the drawn one marked.
fn top_bars(top: &[TopToken], drawn: Option<TokenId>) -> impl IntoView + use<> {
    let row = 18.0;
    let height = row * top.len() as f64 + 4.0;
    let width = LABEL_W + BAR_W + 70.0;
    let rows = top
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let y = 2.0 + i as f64 * row;
            let w = (x.p.clamp(0.0, 1.0) * BAR_W).max(1.0);
            let is_drawn = Some(x.token) == drawn;
            view! {
                <g class="top-token" class:masked=!x.allowed class:drawn=is_drawn data-allowed=x.allowed.to_string()
                    transform=format!("translate(0,{y:.1})")>
                    <title>{if x.allowed { "allowed" } else { "masked: the constraint refuses it here" }}</title>
                    <text class="tok-label" x=(LABEL_W - 6.0).to_string() y="12" text-anchor="end">
                        {if is_drawn { format!("▶ {}", x.label) } else { x.label.clone() }}
                    </text>
                    <rect class="tok-bar" x=LABEL_W.to_string() y="3" width=format!("{w:.1}") height="11"/>
                    {(!x.allowed).then(|| view! {
                        <line class="tok-strike" x1=(LABEL_W - 4.0).to_string() x2=format!("{:.1}", LABEL_W + w + 4.0) y1="8.5" y2="8.5"/>
                    })}
                    <text class="tok-p" x=format!("{:.1}", LABEL_W + w + 6.0) y="12">{fmt_p(x.p)}</text>
                </g>
            }
        })
        .collect_view();
    view! {
        <svg id="view-token-bars" width=width.to_string() height=height.to_string()
            viewBox=format!("0 0 {width} {height}") role="img" aria-label="The most likely next tokens with their probabilities; masked tokens struck out, the drawn one marked">
            {rows}
        </svg>
    }
}

/// P-GCD's guide at the latest step: P(v) and the guided q(v) side by side for the tokens
/// q favours, the drawn token's weight P/q, and over the steps of particle 0 the mask's
/// mass Z and the share of it the guide keeps.
fn guide_view(g: &GuideView, steps: &[(usize, f64, f64)]) -> impl IntoView + use<> {
    let rows = g
        .top
        .iter()
        .map(|t| {
            view! {
                <tr class="guide-token" class:drawn=t.token == g.drawn data-q=t.q.to_string()>
                    <td class="mono">{if t.token == g.drawn { format!("▶ {}", t.label) } else { t.label.clone() }}</td>
                    <td>{bar(t.p, 6.0, "p")}" "{fmt_p(t.p)}</td>
                    <td>{bar(t.q, 6.0, "q")}" "{fmt_p(t.q)}</td>
                </tr>
            }
        })
        .collect_view();
    let z: Vec<f64> = steps.iter().map(|s| s.1).collect();
    let kept: Vec<f64> = steps.iter().map(|s| s.2).collect();
    view! {
        <div id="view-token-guide" data-guide-mass=g.guide_mass.to_string()>
            <div class="stat">{format!(
                "P-GCD's guide (particle {}, position {}): the mask keeps Z = {} of the model's mass; the guide keeps {} of that (Σ P·g̃ / Z) and draws from q ∝ P·g̃; weight P/q = {}",
                g.particle, g.position, fmt_p(g.mask_mass), fmt_p(g.guide_mass), fmt_p(g.weight))}</div>
            <table>
                <tr><th>"token"</th><th>"P (model)"</th><th>"q (guided)"</th></tr>
                {rows}
            </table>
            {(steps.len() > 1).then(|| line_chart(
                "view-token-guide-mass",
                vec![
                    Series { label: "Z (mask)".into(), values: z, color: "#1a8a4a", class: "line-z" },
                    Series { label: "guide's share".into(), values: kept, color: "#7a3fb8", class: "line-guide" },
                ],
                None,
                320.0,
                64.0,
            ))}
        </div>
    }
}

/// Z as the filled fraction of a bar.
fn z_bar(z: f64) -> impl IntoView + use<> {
    let w = 160.0;
    view! {
        <svg id="view-token-z-bar" class="inline-chart" width=w.to_string() height="12" viewBox=format!("0 0 {w} 12")>
            <rect x="0" y="1" width=w.to_string() height="10" fill="#e6e8ee"/>
            <rect x="0" y="1" width=format!("{:.1}", z.clamp(0.0, 1.0) * w) height="10" fill="#1a8a4a"/>
        </svg>
    }
}
