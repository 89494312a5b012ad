//! The MCMC view: the chain's current sequence, the latest proposal (the cut point, the
//! regenerated suffix, the acceptance ratio, accept or reject) and the chain's history.
//!
//! Hooks: `#view-mcmc[data-chains][data-steps]`, `#view-mcmc-proposal[data-accepted]`,
//! `.mcmc-step` (history rows).

use super::session::Session;
use crate::format::fmt_p;
use leptos::prelude::*;
use playground::views::Labels;
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
    view! {
        <div id="view-mcmc" class="view"
            data-chains=move || views.with(|v| v.mcmc.chains.len().to_string())
            data-steps=move || views.with(|v| v.mcmc.current().map_or(0, |c| c.history.len()).to_string())>
            <h3>"MCMC chain"</h3>
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
                        c.chain + 1, v.mcmc.chains.len(), c.history.len(), rate)}</div>
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
