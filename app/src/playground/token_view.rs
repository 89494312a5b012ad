//! The token view: at the latest step, the most likely next tokens with their
//! probabilities, the masked ones greyed, the mass Z the mask kept, and the token drawn.
//!
//! Hooks: `#view-token[data-steps]`, `.top-token[data-allowed]`, `#view-token-z`,
//! `#view-token-drawn`.

use super::session::Session;
use crate::format::fmt_p;
use leptos::prelude::*;

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
            <h3>"Next token"</h3>
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
                    <table>
                        <tr><th>"token"</th><th class="num">"P(a|u)"</th><th></th><th>"mask"</th></tr>
                        {t.top.iter().map(|x| {
                            let is_drawn = Some(x.token) == drawn_id;
                            view! {
                                <tr class="top-token" class:masked=!x.allowed class:drawn=is_drawn
                                    data-allowed=x.allowed.to_string()>
                                    <td class="mono">{x.label.clone()}</td>
                                    <td class="num">{fmt_p(x.p)}</td>
                                    <td>{bar(x.p, 8.0, "")}</td>
                                    <td>{if x.allowed { "allowed" } else { "masked" }}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </table>
                    <div id="view-token-z" class="stat" data-z=t.kept_mass.map(|z| z.to_string())>
                        {match t.kept_mass {
                            Some(z) => format!("Z = {} (the mass the mask kept; masking renormalizes by it)", fmt_p(z)),
                            None => "no mask at this step (Z not applicable)".to_string(),
                        }}
                    </div>
                    {drawn.map(|d| view! {
                        <div id="view-token-drawn" class="stat">"drawn: "
                            <span class="mono drawn">{d.label}</span>
                            {format!(" with P = {}", fmt_p(d.p))}
                        </div>
                    })}
                }.into_any()
            })}
        </div>
    }
}
