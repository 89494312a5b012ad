//! One run of the playground: builds the model and the constraint for a state, drives the
//! sampler (the `playground` crate's [`Run`] records its events), and on every animation
//! frame lets the crate's [`Player`] show the events due at the slider's speed — or one
//! per Step — in the [`Views`].
//!
//! Hooks: `#pg-status[data-state]` (`idle`, `running`, `paused`, `done`, `stopped`,
//! `error`, and `waiting` while a lesson step waits for the model; `data-run` counts runs, `data-items` counts events shown,
//! `data-first-token-ms` the time from Run to the first token shown); `#pg-compile-info`
//! the grammar's compile time (by `performance.now()`) and the constraint's size;
//! `#pg-exact-progress[data-lm-calls]` the model calls of an exact enumeration under way.

use super::editor::GrammarErr;
use super::frames::every_frame;
use super::world::{BuildError, World};
use crate::clock::now_ms;
use leptos::prelude::*;
use leptos::task::spawn_local;
use playground::player::Player;
use playground::runner::{Outcome, Run};
use playground::state::PlaygroundState;
use playground::views::{Labels, Views};
use sampler_core::Event;
use sampler_core::exact::ExactDistribution;

/// What the page shows about the current run besides the views.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunStats {
    /// `performance.now()` at Run.
    pub started_ms: f64,
    /// Milliseconds from Run to the first token shown.
    pub first_token_ms: Option<f64>,
    /// Events shown so far.
    pub shown: usize,
    /// Events the sampler recorded so far.
    pub recorded: usize,
    /// Model calls so far.
    pub lm_calls: u64,
}

/// The run being shown.
struct Live {
    run: Run,
    player: Player,
    paused: bool,
    /// Steps asked for while paused and not yet shown.
    steps_owed: usize,
    last_frame: Option<f64>,
}

/// The playground's run state and its views.
#[derive(Clone, Copy)]
pub struct Session {
    /// The views, fed by the player.
    pub views: RwSignal<Views, LocalStorage>,
    /// `idle`, `running`, `paused`, `done`, `stopped` or `error`.
    pub status: RwSignal<&'static str>,
    /// The line under the buttons (errors, "Done", "Stopped").
    pub message: RwSignal<String>,
    /// The grammar's compile error, marked in the editor.
    pub grammar_error: RwSignal<Option<GrammarErr>>,
    /// Runs started (tests wait for it to change).
    pub runs: RwSignal<u32>,
    /// Timing and counts of the current run.
    pub stats: RwSignal<RunStats>,
    /// The exact P^L of the run's language, or why there is none.
    pub exact: RwSignal<Option<Result<ExactDistribution, String>>, LocalStorage>,
    /// The sampler of the current run (its name).
    pub method: RwSignal<String>,
    /// How long the run's grammar took to compile, and the constraint's size.
    pub compile_info: RwSignal<Option<String>>,
    /// An exact enumeration with the real model under way: model calls so far, and the cap.
    pub exact_progress: RwSignal<Option<(u64, u64)>>,
    live: StoredValue<Option<Live>, LocalStorage>,
    generation: StoredValue<u64>,
    /// Stops a running exact enumeration.
    exact_cancel: StoredValue<Option<std::rc::Rc<std::cell::Cell<bool>>>, LocalStorage>,
    speed: StoredValue<f64>,
}

impl Session {
    /// An idle session with empty views.
    pub fn new() -> Session {
        Session {
            views: RwSignal::new_local(Views::new(Labels::new(0, |t| t.to_string()))),
            status: RwSignal::new("idle"),
            message: RwSignal::new(String::new()),
            grammar_error: RwSignal::new(None),
            runs: RwSignal::new(0),
            stats: RwSignal::new(RunStats::default()),
            exact: RwSignal::new_local(None),
            method: RwSignal::new(String::new()),
            compile_info: RwSignal::new(None),
            exact_progress: RwSignal::new(None),
            live: StoredValue::new_local(None),
            generation: StoredValue::new(0),
            exact_cancel: StoredValue::new_local(None),
            speed: StoredValue::new(f64::INFINITY),
        }
    }

    /// Whether a run is producing or showing events.
    pub fn active(&self) -> bool {
        matches!(self.status.get_untracked(), "running" | "paused")
    }

    /// The current (or last) run, for export.
    pub fn run(&self) -> Option<Run> {
        self.live.with_value(|l| l.as_ref().map(|l| l.run.clone()))
    }

    /// Sets the player's speed (events per second; infinity = everything at once).
    pub fn set_speed(&self, speed: f64) {
        self.speed.set_value(speed);
        self.live.update_value(|l| {
            if let Some(l) = l {
                l.player.speed = speed;
            }
        });
    }

    /// Starts a run of `state` (paused when `paused`: Step shows one event at a time).
    pub fn start(&self, state: PlaygroundState, paused: bool) {
        self.stop_quietly();
        self.runs.update(|n| *n += 1);
        self.grammar_error.set(None);
        self.message.set(String::new());
        self.compile_info.set(None);
        let run = match Run::from_state(&state) {
            Ok(r) => r,
            Err(e) => return self.fail(e),
        };
        let Some(world) = self.build_world(&state) else {
            return;
        };
        let mut views = Views::new(world.labels());
        let exact = world.exact(&state);
        if let Ok(e) = &exact {
            views.results.set_exact(e);
        }
        self.views.set(views);
        self.exact.set(Some(exact));
        self.method.set(state.method.clone());
        let generation = self.generation.get_value() + 1;
        self.generation.set_value(generation);
        self.live.set_value(Some(Live {
            run: run.clone(),
            player: Player::new(self.speed.get_value()),
            paused,
            steps_owed: usize::from(paused),
            last_frame: None,
        }));
        self.stats.set(RunStats {
            started_ms: now_ms(),
            ..RunStats::default()
        });
        self.status.set(if paused { "paused" } else { "running" });
        let driven = run.clone();
        let this = *self;
        spawn_local(async move {
            if let Err(e) = world.drive(&driven).await
                && this.generation.get_value() == generation
            {
                this.generation.update_value(|g| *g += 1);
                this.fail(e);
            }
        });
        every_frame(move |now| this.frame(now, generation));
    }

    /// One animation frame: show the events due; `false` ends the frame loop.
    fn frame(&self, now: f64, generation: u64) -> bool {
        if self.generation.get_value() != generation {
            return false;
        }
        let mut shown_token = false;
        let mut outcome = None;
        let mut counts = None;
        // Take the views for writing only when there is something to show (a write
        // re-renders them).
        let due = self.live.with_value(|l| {
            l.as_ref().is_some_and(|l| {
                l.run.len() > l.player.position() && (!l.paused || l.steps_owed > 0)
            })
        });
        let mut views = due.then(|| self.views.write());
        self.live.update_value(|l| {
            let Some(l) = l.as_mut() else { return };
            let dt = l.last_frame.map_or(0.0, |t| (now - t) / 1000.0);
            l.last_frame = Some(now);
            let before = l.player.position();
            if let Some(views) = views.as_deref_mut() {
                if l.paused {
                    while l.steps_owed > 0 && l.player.step(&l.run, views) {
                        l.steps_owed -= 1;
                    }
                } else if before == 0 && dt == 0.0 && l.player.speed.is_finite() {
                    // The first frame shows one event at once.
                    l.player.step(&l.run, views);
                } else {
                    l.player.tick(&l.run, views, dt);
                }
            }
            let after = l.player.position();
            shown_token = (before..after)
                .any(|i| matches!(l.run.event(i).map(|e| e.event), Some(Event::Token { .. })));
            if l.run.is_finished() && after >= l.run.len() {
                outcome = l.run.outcome();
            }
            counts = Some((after, l.run.len(), l.run.live_counters().lm_calls));
        });
        drop(views);
        if let Some(counts) = counts
            && (shown_token
                || counts
                    != self
                        .stats
                        .with_untracked(|s| (s.shown, s.recorded, s.lm_calls)))
        {
            self.stats.update(|s| {
                if shown_token && s.first_token_ms.is_none() {
                    s.first_token_ms = Some(now_ms() - s.started_ms);
                }
                (s.shown, s.recorded, s.lm_calls) = counts;
            });
        }
        match outcome {
            None => true,
            Some(Outcome::Completed(_)) => {
                self.status.set("done");
                self.message.set("Done.".into());
                false
            }
            Some(Outcome::BudgetReached) => {
                self.status.set("done");
                self.message
                    .set("Done: the budget of model calls is spent.".into());
                false
            }
            Some(Outcome::Cancelled) => false,
            Some(Outcome::Failed(e)) => {
                self.fail(e);
                false
            }
        }
    }

    /// Stop (Esc): the sampler stops at its next check; what is shown stays.
    pub fn stop(&self) {
        if self.active() {
            self.stop_quietly();
            self.status.set("stopped");
            self.message.set("Stopped.".into());
        }
    }

    fn stop_quietly(&self) {
        self.generation.update_value(|g| *g += 1);
        self.exact_progress.set(None);
        self.exact_cancel.update_value(|c| {
            if let Some(c) = c.take() {
                c.set(true);
            }
        });
        self.live.with_value(|l| {
            if let Some(l) = l {
                l.run.cancel();
            }
        });
    }

    /// Computes the exact P^L with the real model (Stop cancels it); later runs of the
    /// same setup show it.
    pub fn compute_exact(&self, state: PlaygroundState) {
        if self.active() {
            return;
        }
        self.runs.update(|n| *n += 1);
        self.grammar_error.set(None);
        self.compile_info.set(None);
        let world = match self.build_world(&state) {
            Some(w @ World::Real { .. }) => w,
            Some(_) => return self.fail("Toy models compute the exact P^L with every run.".into()),
            None => return,
        };
        self.stop_quietly();
        let generation = self.generation.get_value();
        let cancel = std::rc::Rc::new(std::cell::Cell::new(false));
        self.live.set_value(None);
        self.stats.set(RunStats::default());
        self.exact_cancel.set_value(Some(cancel.clone()));
        self.status.set("running");
        self.message
            .set("Enumerating the language with the model (one forward pass per prefix)…".into());
        let labels = world.labels();
        let this = *self;
        let cap = playground::exact::ExactLimits::real(state.max_tokens).max_lm_calls;
        self.exact_progress.set(Some((0, cap)));
        spawn_local(async move {
            let stop: std::rc::Rc<dyn Fn() -> bool> = {
                let c = cancel.clone();
                std::rc::Rc::new(move || c.get())
            };
            let progress: std::rc::Rc<dyn Fn(u64)> = std::rc::Rc::new(move |n| {
                if this.generation.get_value() == generation {
                    this.exact_progress.set(Some((n, cap)));
                }
            });
            let r = world.exact_real(&state, stop, progress).await;
            if this.generation.get_value() == generation {
                this.exact_progress.set(None);
            }
            if this.generation.get_value() != generation || cancel.get() {
                return;
            }
            match &r {
                Ok(e) => {
                    // Fresh views: the samples of an earlier setup do not belong beside it.
                    let mut views = Views::new(labels);
                    views.results.set_exact(e);
                    this.views.set(views);
                    this.status.set("done");
                    this.message.set(format!(
                        "Exact P^L: {} token sequences, P(L) = {:.3e}.",
                        e.entries.len(),
                        e.z
                    ));
                }
                Err(msg) => this.fail(msg.clone()),
            }
            this.exact.set(Some(r));
        });
    }

    /// Builds what `state` samples from and shows its compile line; a grammar error is
    /// marked in the editor and any failure shown (then `None`).
    fn build_world(&self, state: &PlaygroundState) -> Option<World> {
        match World::build(state) {
            Ok(world) => {
                self.compile_info
                    .set(Some(world.compile_note().to_string()));
                Some(world)
            }
            Err(BuildError::Grammar(e)) => {
                self.message
                    .set(format!("The grammar does not compile: {}", e.message));
                self.grammar_error.set(Some(e));
                self.status.set("error");
                None
            }
            Err(BuildError::Other(e)) => {
                self.fail(e);
                None
            }
        }
    }

    /// Step: one more event (starting a paused run of `state` when none is active).
    pub fn step(&self, state: impl FnOnce() -> Option<PlaygroundState>) {
        if self.active() {
            self.live.update_value(|l| {
                if let Some(l) = l {
                    l.paused = true;
                    l.steps_owed += 1;
                }
            });
            self.status.set("paused");
        } else if let Some(s) = state() {
            self.start(s, true);
        }
    }

    /// Run while paused: play on at the slider's speed.
    pub fn resume(&self) {
        if self.status.get_untracked() == "paused" {
            self.live.update_value(|l| {
                if let Some(l) = l {
                    l.paused = false;
                    l.steps_owed = 0;
                    l.last_frame = None;
                }
            });
            self.status.set("running");
        }
    }

    /// Shows `msg` as the run's error.
    pub fn fail(&self, msg: String) {
        self.status.set("error");
        self.message.set(msg);
    }
}
