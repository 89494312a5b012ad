//! The crate at run time in wasm32 (what the page runs), not only compiled: permalinks,
//! a toy run with its views, a grammar through llguidance, the ground truth.
//!
//! `CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!  cargo test -p playground --target wasm32-unknown-unknown --test wasm`
#![cfg(target_arch = "wasm32")]

use playground::constraint::build_constraint;
use playground::detect::GrammarKind;
use playground::exact::{ExactLimits, ground_truth_ready, tv};
use playground::permalink::{decode, encode};
use playground::player::Player;
use playground::runner::{Outcome, Run};
use playground::state::{PlaygroundState, ToyModel};
use playground::toy::build;
use playground::views::{Labels, Views};
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn permalinks_round_trip_and_refuse_hostile_links() {
    for e in playground::examples::examples() {
        let s = e.state();
        assert_eq!(decode(&encode(&s)).unwrap(), s);
    }
    assert!(decode("v=1&s=<script>").is_err());
    assert!(decode("v=9&s=Q").is_err());
}

#[wasm_bindgen_test]
fn lcd_is_biased_and_cars_is_not_on_gsk() {
    let (mut lm, v) = build(ToyModel::Gsk);
    let c = build_constraint(
        GrammarKind::Gbnf,
        include_str!("../../../assets/examples/gsk.gbnf"),
        &v,
    )
    .unwrap();
    let exact = ground_truth_ready(&mut lm, &c, ExactLimits::toy(8)).unwrap();
    let mut tvs = Vec::new();
    for m in ["lcd", "cars"] {
        let s = PlaygroundState {
            method: m.into(),
            n: 1000,
            ..PlaygroundState::default()
        };
        let run = Run::from_state(&s).unwrap();
        let o = run.drive_ready(&mut build(ToyModel::Gsk).0, &c, Some(&v));
        assert!(matches!(o, Outcome::Completed(_)), "{o:?}");
        let mut views = Views::new(Labels::from_vocabulary(&v));
        Player::new(f64::INFINITY).to_end(&run, &mut views);
        tvs.push(tv(&views.results.empirical(), &exact));
    }
    assert!(tvs[0] > 0.35 && tvs[1] < 0.1, "{tvs:?}");
}

#[wasm_bindgen_test]
fn grammar_errors_have_positions() {
    let (_, v) = build(ToyModel::Gsk);
    let e = build_constraint(GrammarKind::Gbnf, "root ::= \"0\"\nx ::= \"1\" @\n", &v).unwrap_err();
    assert_eq!(e.line, Some(2));
}

#[wasm_bindgen_test]
fn batches_survive_the_trip_to_and_from_a_worker() {
    use playground::runner::{Batch, BatchReader, RunSpec};
    let (_, v) = build(ToyModel::Gsk);
    let c = build_constraint(GrammarKind::Regex, playground::toy::GSK_REGEX, &v).unwrap();
    // Every event type: trie inserts and prunes (cars), c̃ updates (asap), MCMC proposals
    // with −∞ log ratios (mcmc-uniform), particles, resampling and evidence (awrs-smc).
    for m in ["cars", "asap", "mcmc-uniform", "awrs-smc", "lcd"] {
        let s = PlaygroundState {
            method: m.into(),
            n: 6,
            max_tokens: 8,
            ..PlaygroundState::default()
        };
        let run = Run::from_state(&s).unwrap();
        run.drive_ready(&mut build(ToyModel::Gsk).0, &c, Some(&v));
        let spec: RunSpec =
            serde_wasm_bindgen::from_value(serde_wasm_bindgen::to_value(&run.spec()).unwrap())
                .unwrap();
        assert_eq!(spec, run.spec(), "{m}");
        let batch = BatchReader::new().next(&run).unwrap();
        let back: Batch =
            serde_wasm_bindgen::from_value(serde_wasm_bindgen::to_value(&batch).unwrap()).unwrap();
        assert_eq!(back, batch, "{m}");
        let outcome = run.outcome().unwrap();
        let o: Outcome =
            serde_wasm_bindgen::from_value(serde_wasm_bindgen::to_value(&outcome).unwrap())
                .unwrap();
        assert_eq!(o, outcome, "{m}");
    }
    // The exact P^L the worker computes for the page.
    let exact = ground_truth_ready(&mut build(ToyModel::Gsk).0, &c, ExactLimits::toy(8)).unwrap();
    let back: sampler_core::exact::ExactDistribution =
        serde_wasm_bindgen::from_value(serde_wasm_bindgen::to_value(&exact).unwrap()).unwrap();
    assert_eq!(back.entries, exact.entries);
    assert_eq!(back.log_z, exact.log_z);
    assert_eq!(back.index_of(&exact.entries[1].tokens), Some(1));
}
