//! Compare mode: two to four samplers on the same grammar, model and seed, each stopped
//! after the same budget of LM calls, their distributions side by side with the exact
//! P^L and the TV distance (the bias of token masking against an exact sampler).
//!
//! Hooks: `#compare[data-state]`, `.compare-col[data-method][data-samples][data-lm-calls]
//! [data-tv]` (one per sampler), with the results view's `.output-row` rows inside.

use super::chart::{XySeries, xy_chart};
use super::frames::every_frame;
use super::results_view::{dist_rows, dist_table, tv};
use super::session::Session;
use super::world::World;
use leptos::prelude::*;
use leptos::task::spawn_local;
use playground::player::Player;
use playground::runner::{Outcome, Run};
use playground::state::{PlaygroundState, caps};
use playground::views::Views;
use sampler_core::exact::ExactDistribution;

/// One sampler's column.
pub struct Column {
    /// The sampler's name.
    pub method: String,
    /// Its views (the results are what the column shows).
    pub views: Views,
    /// How its run ended, once it has.
    pub outcome: Option<String>,
}

/// The compare mode's runs and columns.
#[derive(Clone, Copy)]
pub struct Compare {
    /// One column per sampler.
    pub columns: RwSignal<Vec<Column>, LocalStorage>,
    /// The exact P^L (or why there is none).
    pub exact: RwSignal<Option<Result<ExactDistribution, String>>, LocalStorage>,
    /// The budget of LM calls per sampler.
    pub budget: RwSignal<u64>,
    runs: StoredValue<Vec<(Run, Player)>, LocalStorage>,
    generation: StoredValue<u64>,
}

impl Compare {
    /// No columns yet.
    pub fn new() -> Compare {
        Compare {
            columns: RwSignal::new_local(Vec::new()),
            exact: RwSignal::new_local(None),
            budget: RwSignal::new(0),
            runs: StoredValue::new_local(Vec::new()),
            generation: StoredValue::new(0),
        }
    }

    /// Runs every sampler of `state.compare` with `budget` LM calls each; progress
    /// and the end go to `session`'s status line.
    pub fn start(&self, state: &PlaygroundState, session: Session) {
        self.stop();
        session.stop();
        session.runs.update(|n| *n += 1);
        session.grammar_error.set(None);
        session.compile_info.set(None);
        let planned = match Run::compare_from_state(state) {
            Ok(r) if (2..=caps::COMPARE).contains(&r.len()) => r,
            Ok(_) => {
                return session.fail(format!(
                    "Compare mode needs two to {} samplers: tick them above.",
                    caps::COMPARE
                ));
            }
            Err(e) => return session.fail(e),
        };
        let generation = self.generation.get_value() + 1;
        self.generation.set_value(generation);
        let mut columns = Vec::new();
        let mut runs = Vec::new();
        for run in planned {
            let world = match World::build(state) {
                Ok(w) => w,
                Err(super::world::BuildError::Grammar(e)) => {
                    session
                        .message
                        .set(format!("The grammar does not compile: {}", e.message));
                    session.grammar_error.set(Some(e));
                    session.status.set("error");
                    return;
                }
                Err(super::world::BuildError::Other(e)) => return session.fail(e),
            };
            if columns.is_empty() {
                session
                    .compile_info
                    .set(Some(world.compile_note().to_string()));
                self.exact.set(Some(world.exact(state)));
            }
            let mut views = Views::new(world.labels());
            if let Some(Ok(e)) = self.exact.get_untracked().as_ref() {
                views.results.set_exact(e);
            }
            columns.push(Column {
                method: run.method().name().to_string(),
                views,
                outcome: None,
            });
            let driven = run.clone();
            spawn_local(async move {
                let _ = world.drive(&driven).await;
            });
            runs.push((run, Player::new(f64::INFINITY)));
        }
        self.columns.set(columns);
        self.budget.set(state.budget);
        self.runs.set_value(runs);
        session.status.set("running");
        session.message.set(format!(
            "Comparing with {} LM calls per sampler…",
            state.budget
        ));
        let this = *self;
        every_frame(move |_| this.frame(generation, session));
    }

    fn frame(&self, generation: u64, session: Session) -> bool {
        if self.generation.get_value() != generation {
            return false;
        }
        let mut all_done = true;
        let mut columns = self.columns.write();
        self.runs.update_value(|runs| {
            for ((run, player), col) in runs.iter_mut().zip(columns.iter_mut()) {
                player.to_end(run, &mut col.views);
                match run.outcome() {
                    Some(o) if player.position() >= run.len() => {
                        col.outcome = Some(match o {
                            Outcome::Completed(_) => "finished".into(),
                            Outcome::BudgetReached => "budget spent".into(),
                            Outcome::Cancelled => "stopped".into(),
                            Outcome::Failed(e) => format!("failed: {e}"),
                        });
                    }
                    _ => all_done = false,
                }
            }
        });
        drop(columns);
        if all_done {
            session.status.set("done");
            session
                .message
                .set("Done: every sampler spent its budget.".into());
        }
        !all_done
    }

    /// Stops every run.
    pub fn stop(&self) {
        self.generation.update_value(|g| *g += 1);
        self.runs
            .with_value(|runs| runs.iter().for_each(|(r, _)| r.cancel()));
    }
}

/// The compare view.
#[component]
pub fn CompareView(compare: Compare, session: Session) -> impl IntoView {
    let columns = compare.columns;
    let exact = compare.exact;
    view! {
        <div id="compare" class="view compare" data-state=move || session.status.get()>
            <div class="view-head"><h3>"Compare: equal budgets of LM calls"</h3><super::snapshot::ExportButtons id="compare" what="comparison"/></div>
            {move || exact.with(|ex| match ex {
                Some(Ok(e)) => view! { <div class="stat">{format!(
                    "exact P^L by enumeration: {} sequences, P(L) = {:.4}", e.entries.len(), e.z)}</div> }.into_any(),
                Some(Err(why)) => view! { <div id="compare-exact-note" class="stat">{why.clone()}</div> }.into_any(),
                None => view! { <p class="muted">"Tick two to four samplers and press Run."</p> }.into_any(),
            })}
            {move || columns.with(|cols| {
                let colors = ["#2c5fd6", "#c0392b", "#1a8a4a", "#e08a00"];
                let series: Vec<XySeries> = cols.iter().zip(colors.iter().cycle()).map(|(c, &color)| XySeries {
                    label: c.method.clone(),
                    points: c.views.results.kl.iter().filter(|p| p.kl.is_finite())
                        .map(|p| (p.lm_calls as f64, p.kl)).collect(),
                    color,
                }).collect();
                series.iter().any(|s| s.points.len() > 1).then(|| xy_chart(
                    "compare-kl",
                    series,
                    ("LM calls", "KL(samples ‖ P^L), nats (capped at 10)", 10.0),
                    420.0,
                    120.0,
                ))
            })}
            <div class="compare-grid">
                {move || columns.with(|cols| exact.with(|ex| {
                    let e = ex.as_ref().and_then(|e| e.as_ref().ok());
                    cols.iter().map(|c| {
                        let r = &c.views.results;
                        let t = e.and_then(|e| tv(r, e));
                        view! {
                            <div class="compare-col" data-method=c.method.clone()
                                data-samples=r.samples.to_string()
                                data-lm-calls=r.counters.lm_calls.to_string()
                                data-tv=t.map(|t| t.to_string())>
                                <h3>{c.method.clone()}</h3>
                                <div class="stat">{format!("{} samples ({} valid) · {} LM calls",
                                    r.samples, r.valid, r.counters.lm_calls)}
                                    {c.outcome.clone().map(|o| format!(" · {o}"))}</div>
                                {t.map(|t| view! { <div class="stat"><b>{format!("TV to exact P^L: {t:.3}")}</b></div> })}
                                {dist_table(dist_rows(r, e, &c.views.labels), e.is_some())}
                            </div>
                        }
                    }).collect_view()
                }))}
            </div>
        </div>
    }
}
