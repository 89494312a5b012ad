//! The run buffer: Stop, the compare-mode budget, live counters, and replay by step and speed.

use playground::constraint::build_constraint;
use playground::detect::GrammarKind;
use playground::examples::TOY_RANDOM;
use playground::export::{events_jsonl, samples_jsonl};
use playground::on_call::OnCall;
use playground::player::Player;
use playground::runner::{BatchReader, Outcome, Run};
use playground::state::{ModelChoice, PlaygroundState, ToyModel};
use playground::toy::{GSK_REGEX, ToyLm};
use playground::views::{Labels, Views};
use sampler_core::Event;
use sampler_core::samplers::{Method, Params};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A toy model that presses Stop on `run` at its `after`-th call.
fn stop_after(run: &Run, after: u64) -> OnCall<ToyLm> {
    let run = run.clone();
    OnCall::new(ToyModel::Gsk.lm(), move |calls| {
        if calls >= after {
            run.cancel();
        }
    })
}

fn gsk_params(n: usize) -> Params {
    Params {
        n,
        max_tokens: 8,
        ..Params::default()
    }
}

#[test]
fn stop_mid_run_keeps_what_was_recorded() {
    let v = ToyModel::Gsk.vocabulary();
    let c = build_constraint(GrammarKind::Regex, GSK_REGEX, &v).unwrap();
    let run = Run::new(Method::Cars, gsk_params(1000), 1);
    let mut lm = stop_after(&run, 25);
    assert_eq!(run.drive_ready(&mut lm, &c, Some(&v)), Outcome::Cancelled);
    assert_eq!(run.outcome(), Some(Outcome::Cancelled));
    assert!(run.is_cancelled() && run.is_finished());
    assert_eq!(run.live_counters().lm_calls, 25);
    assert!(!run.is_empty());
    assert!(run.samples().len() < 1000);
    // Driving it again changes nothing.
    let len = run.len();
    let again = run.drive_ready(&mut ToyModel::Gsk.lm(), &c, Some(&v));
    assert!(matches!(again, Outcome::Failed(m) if m.contains("already driven")));
    assert_eq!(run.len(), len);
    assert_eq!(run.outcome(), Some(Outcome::Cancelled));
}

#[test]
fn the_budget_stops_each_compared_method_at_the_same_calls() {
    let v = TOY_RANDOM.vocabulary();
    let c = build_constraint(GrammarKind::Regex, "ab|ba|aab|c{1,2}", &v).unwrap();
    for m in [Method::Lcd, Method::Cars, Method::McmcUniform, Method::Rs] {
        let run = Run::new(
            m,
            Params {
                n: 10_000,
                max_tokens: 6,
                ..Params::default()
            },
            3,
        )
        .with_lm_call_budget(60);
        let o = run.drive_ready(&mut TOY_RANDOM.lm(), &c, Some(&v));
        assert_eq!(o, Outcome::BudgetReached, "{m}");
        assert_eq!(run.live_counters().lm_calls, 60, "{m}");
        // Samples before the budget carry counters within it.
        assert!(
            run.samples().iter().all(|s| s.counters.lm_calls <= 60),
            "{m}"
        );
    }
}

#[test]
fn live_counters_agree_with_the_samples_counters() {
    let v = ToyModel::Gsk.vocabulary();
    let c = build_constraint(GrammarKind::Regex, GSK_REGEX, &v).unwrap();
    for m in [
        Method::Lcd,
        Method::Cars,
        Method::AwrsSmc,
        Method::McmcPriority,
        Method::GcdBudget,
    ] {
        let run = Run::new(m, gsk_params(20), 5);
        let o = run.drive_ready(&mut ToyModel::Gsk.lm(), &c, Some(&v));
        let Outcome::Completed(total) = o else {
            panic!("{m}: {o:?}")
        };
        // One source of truth: what the sampler's context counted, budget masks included.
        let live = run.live_counters();
        assert_eq!(live.lm_calls, total.lm_calls, "{m}");
        assert_eq!(live.forward_tokens, total.forward_tokens, "{m}");
        assert_eq!(live.constraint_checks, total.constraint_checks, "{m}");
        assert!(live.constraint_checks > 0, "{m}");
        // Every SampleFinished event carries its sample's counters.
        let events = run.events_from(0);
        let with: Vec<_> = events
            .iter()
            .filter(|e| matches!(e.event, Event::SampleFinished { .. }))
            .map(|e| e.counters.expect("counters attached"))
            .collect();
        let samples: Vec<_> = run.samples().iter().map(|s| s.counters).collect();
        assert_eq!(with, samples, "{m}");
    }
}

#[test]
fn failures_are_one_line_outcomes() {
    // gcd-budget needs a regular constraint; G_sk as GBNF is context-free.
    let v = ToyModel::Gsk.vocabulary();
    let c = build_constraint(
        GrammarKind::Gbnf,
        include_str!("../../../assets/examples/gsk.gbnf"),
        &v,
    )
    .unwrap();
    let run = Run::new(Method::GcdBudget, gsk_params(3), 1);
    match run.drive_ready(&mut ToyModel::Gsk.lm(), &c, Some(&v)) {
        Outcome::Failed(m) => assert!(m.contains("regular") && !m.contains('\n'), "{m}"),
        o => panic!("{o:?}"),
    }
    // A state that does not validate gives no run.
    let bad = PlaygroundState {
        n: 0,
        ..PlaygroundState::default()
    };
    assert!(Run::from_state(&bad).unwrap_err().contains("n must be"));
}

#[test]
fn player_steps_and_ticks_at_its_speed() {
    let v = ToyModel::Gsk.vocabulary();
    let c = build_constraint(GrammarKind::Regex, GSK_REGEX, &v).unwrap();
    let run = Run::new(Method::Cars, gsk_params(5), 2);
    run.drive_ready(&mut ToyModel::Gsk.lm(), &c, Some(&v));
    let total = run.len();
    assert!(total > 10);
    let labels = Labels::from_vocabulary(&v);
    let mut views = Views::new(labels.clone());
    let mut p = Player::new(10.0);
    assert!(p.step(&run, &mut views));
    assert_eq!((p.position(), views.applied), (1, 1));
    assert_eq!(p.tick(&run, &mut views, 0.25), 2); // 2.5 events: 2 now
    assert_eq!(p.tick(&run, &mut views, 0.25), 3); // 0.5 + 2.5
    assert_eq!(p.position(), 6);
    assert_eq!(p.to_end(&run, &mut views), total - 6);
    assert!(!p.step(&run, &mut views));
    assert_eq!(p.tick(&run, &mut views, 100.0), 0);
    // Replaying everything at once gives the same views as stepping through.
    let mut all = Views::new(labels);
    let mut fast = Player::new(f64::INFINITY);
    assert_eq!(fast.tick(&run, &mut all, 0.0), total);
    assert_eq!(all.results.outputs, views.results.outputs);
    assert_eq!(all.trie, views.trie);
}

#[test]
fn run_toy_runs_a_state_and_refuses_real_ones() {
    let s = PlaygroundState::default();
    let run = Run::run_toy(&s).unwrap();
    assert_eq!(run.samples().len(), s.n);
    let real = PlaygroundState {
        model: ModelChoice::Real { url: None },
        ..s.clone()
    };
    assert!(Run::run_toy(&real).unwrap_err().contains("real model"));
    let broken = PlaygroundState {
        grammar: "0(1".into(),
        ..s
    };
    assert!(
        Run::run_toy(&broken)
            .unwrap_err()
            .contains("line 1, column 2")
    );
}

#[test]
fn past_the_event_cap_only_samples_are_kept() {
    let v = ToyModel::Gsk.vocabulary();
    let c = build_constraint(GrammarKind::Regex, GSK_REGEX, &v).unwrap();
    let run = Run::new(Method::Lcd, gsk_params(50), 1).with_max_events(100);
    run.drive_ready(&mut ToyModel::Gsk.lm(), &c, Some(&v));
    assert!(run.truncated());
    let events = run.events_from(0);
    let finished = events
        .iter()
        .filter(|e| matches!(e.event, Event::SampleFinished { .. }))
        .count();
    assert_eq!(finished, 50);
    assert!(events.len() < 150);
    let mut views = Views::new(Labels::from_vocabulary(&v));
    Player::new(f64::INFINITY).to_end(&run, &mut views);
    assert_eq!(views.results.samples, 50);
}

#[test]
fn export_writes_one_line_per_sample_and_event() {
    let s = PlaygroundState {
        model: ModelChoice::Toy(ToyModel::Gsk),
        n: 7,
        ..PlaygroundState::default()
    };
    let v = ToyModel::Gsk.vocabulary();
    let c = build_constraint(s.grammar_kind, &s.grammar, &v).unwrap();
    let run = Run::from_state(&s).unwrap();
    run.drive_ready(&mut ToyModel::Gsk.lm(), &c, Some(&v));
    let labels = Labels::from_vocabulary(&v);
    let samples = samples_jsonl(&run.samples(), &labels);
    assert_eq!(samples.lines().count(), 7);
    for line in samples.lines() {
        let j: serde_json::Value = serde_json::from_str(line).unwrap();
        let text = j["text"].as_str().unwrap();
        assert!(
            text.len() == 5 && text.starts_with('1') || text == "00000",
            "{text}"
        );
    }
    let events = events_jsonl(&run.events_from(0));
    assert_eq!(events.lines().count(), run.len());
    assert!(
        events
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
    );
}

#[test]
fn a_run_mirrored_batch_by_batch_equals_the_run() {
    let v = ToyModel::Gsk.vocabulary();
    let c = build_constraint(GrammarKind::Regex, GSK_REGEX, &v).unwrap();
    for m in [
        Method::Lcd,
        Method::Cars,
        Method::Asap,
        Method::AwrsSmc,
        Method::SmcGcd,
        Method::McmcUniform,
    ] {
        let run = Run::new(m, gsk_params(12), 7).with_max_events(500);
        let mirror = Run::from_spec(run.spec());
        assert_eq!(mirror.spec(), run.spec(), "{m}");
        // Before each model call, what the run recorded so far goes to the mirror, as the
        // page's sampling worker posts it before each forward pass.
        let reader = Rc::new(RefCell::new(BatchReader::new()));
        let batches = Rc::new(Cell::new(0));
        let flush = {
            let (run, mirror, reader, batches) =
                (run.clone(), mirror.clone(), reader.clone(), batches.clone());
            Rc::new(move || {
                if let Some(b) = reader.borrow_mut().next(&run) {
                    batches.set(batches.get() + 1);
                    mirror.apply_batch(b);
                }
            })
        };
        let before_call = flush.clone();
        let mut lm = OnCall::new(ToyModel::Gsk.lm(), move |_| before_call());
        let o = run.drive_ready(&mut lm, &c, Some(&v));
        assert!(matches!(o, Outcome::Completed(_)), "{m}: {o:?}");
        flush();
        assert!(
            reader.borrow_mut().next(&run).is_none(),
            "{m}: nothing left to send"
        );
        mirror.finish_remote(o.clone());
        assert!(batches.get() > 2, "{m}: sent in {} batches", batches.get());
        assert_eq!(mirror.events_from(0), run.events_from(0), "{m}");
        assert_eq!(mirror.samples(), run.samples(), "{m}");
        assert_eq!(mirror.live_counters(), run.live_counters(), "{m}");
        assert_eq!(mirror.truncated(), run.truncated(), "{m}");
        assert_eq!(mirror.outcome(), Some(o), "{m}");
    }
}

#[test]
fn stop_calls_the_cancel_hooks_once() {
    let run = Run::new(Method::Lcd, gsk_params(1), 1);
    let calls = std::rc::Rc::new(std::cell::Cell::new(0));
    let c = calls.clone();
    run.on_cancel(move || c.set(c.get() + 1));
    run.cancel();
    run.cancel();
    assert_eq!(calls.get(), 1);
    // A hook added after Stop runs at once.
    let c = calls.clone();
    run.on_cancel(move || c.set(c.get() + 10));
    assert_eq!(calls.get(), 11);
    // A remote outcome does not replace one already set.
    run.finish_remote(Outcome::Cancelled);
    run.finish_remote(Outcome::BudgetReached);
    assert_eq!(run.outcome(), Some(Outcome::Cancelled));
}

/// The chain view draws MCMC's chains one after another, so the page runs them so whatever
/// batch B says; B still reaches the rejection samplers.
#[test]
fn the_page_runs_mcmc_one_chain_at_a_time_and_keeps_batch_for_rejection() {
    let batched = |method: Method| {
        let params = Params {
            batch: 4,
            ..gsk_params(2)
        };
        Run::new(method, params, 1).params().batch
    };
    assert_eq!(batched(Method::McmcRestart), 1);
    assert_eq!(batched(Method::McmcUniform), 1);
    assert_eq!(batched(Method::Cars), 4);
}
