//! The views, fed the real event streams of samplers running on the toy models, agree with
//! what the samplers themselves hold: the trie's masses, SMC's particles and weights, MCMC's
//! chain states. Each check is paired with a broken view that it catches.

use playground::constraint::build_constraint;
use playground::detect::GrammarKind;
use playground::exact::{ExactLimits, ground_truth_ready, tv};
use playground::examples::{TOY_RANDOM, example};
use playground::runner::{Outcome, Run};
use playground::state::ToyModel;
use playground::toy::{GSK_REGEX, ToyLm};
use playground::views::{Labels, TrieView, Views};
use sampler_core::DynConstraint;
use sampler_core::samplers::trie::Trie;
use sampler_core::samplers::{Ctx, Method, Params, asap, rejection};
use sampler_core::{Event, SeededRng, VecSink, Vocabulary, block_on};

const RANDOM_GRAMMAR: &str = "ab|ba|aab|c{1,2}";

fn gsk() -> (ToyLm, DynConstraint<'static>, Vocabulary) {
    let v = ToyModel::Gsk.vocabulary();
    let c = build_constraint(GrammarKind::Regex, GSK_REGEX, &v).unwrap();
    (ToyModel::Gsk.lm(), c, v)
}

fn random() -> (ToyLm, DynConstraint<'static>, Vocabulary) {
    let v = TOY_RANDOM.vocabulary();
    let c = build_constraint(GrammarKind::Regex, RANDOM_GRAMMAR, &v).unwrap();
    (TOY_RANDOM.lm(), c, v)
}

fn run(
    method: Method,
    params: Params,
    seed: u64,
    toy: fn() -> (ToyLm, DynConstraint<'static>, Vocabulary),
) -> (Run, Views) {
    let (mut lm, c, v) = toy();
    let r = Run::new(method, params, seed);
    let o = r.drive_ready(&mut lm, &c, Some(&v));
    assert!(matches!(o, Outcome::Completed(_)), "{method}: {o:?}");
    let mut views = Views::for_method(Labels::from_vocabulary(&v), method);
    for e in r.events_from(0) {
        views.apply_recorded(&e);
    }
    (r, views)
}

/// Runs a trie sampler with our own trie so its final masses can be compared with the view;
/// `None` runs ASAp.
fn trie_run(strategy: Option<rejection::Strategy>, n: usize, seed: u64) -> (Trie, Vec<Event>) {
    let (mut lm, c, v) = random();
    let params = Params {
        n,
        max_tokens: 6,
        ..Params::default()
    };
    let mut trie = Trie::new(v.len());
    let mut sink = VecSink::default();
    let mut rng = SeededRng::new(seed);
    let mut out = |_: &sampler_core::samplers::Sample| {};
    let mut ctx = Ctx::new(
        &mut lm,
        &c,
        &mut rng,
        &mut sink,
        &params,
        Some(&v),
        &mut out,
    );
    match strategy {
        None => block_on(asap::asap_sample(&mut ctx, &mut trie)).unwrap(),
        Some(s) => block_on(rejection::rejection_sample(&mut ctx, s, &mut trie, None)).unwrap(),
    }
    (trie, sink.0)
}

fn assert_trie_matches(trie: &Trie, view: &TrieView) -> Result<(), String> {
    let entries = trie.entries();
    if entries.len() != view.nodes.len() {
        return Err(format!(
            "{} nodes, view has {}",
            entries.len(),
            view.nodes.len()
        ));
    }
    for (prefix, mass) in entries {
        let got = view.mass(&prefix).ok_or(format!("{prefix:?} missing"))?;
        if (got - mass).abs() > 1e-12 {
            return Err(format!("{prefix:?}: view {got}, trie {mass}"));
        }
    }
    Ok(())
}

#[test]
fn cars_trie_view_matches_the_samplers_trie() {
    let (trie, events) = trie_run(Some(rejection::Strategy::Cars), 40, 3);
    assert!(
        trie.len() > 3,
        "a trie worth checking: {} nodes",
        trie.len()
    );
    let mut view = TrieView::default();
    events.iter().for_each(|e| view.apply(e));
    assert_trie_matches(&trie, &view).unwrap();
    assert!(view.nodes.values().any(|n| n.pruned_count > 0));
    // The flat layout: every node once, each with its parent row, the root first.
    let rows = view.layout(&Labels::from_vocabulary(&random().2), usize::MAX);
    assert_eq!(rows.len(), view.nodes.len());
    assert!(rows[0].prefix.is_empty() && rows[0].parent.is_none());
    for r in &rows[1..] {
        let p = &rows[r.parent.expect("every node's parent is a node")];
        assert_eq!(p.prefix[..], r.prefix[..r.prefix.len() - 1]);
        assert_eq!(r.depth, r.prefix.len());
    }
    assert_eq!(
        view.layout(&Labels::from_vocabulary(&random().2), 3).len(),
        3
    );
    // Acceptance per sample: one entry per valid sample, ending at valid / generations.
    assert_eq!(view.acceptance.len(), 40);
    assert!((view.acceptance[39] - 40.0 / (40 + view.rejected) as f64).abs() < 1e-15);
    // A view that ignores the upward propagation is caught.
    let mut broken = TrieView::default();
    events
        .iter()
        .filter(|e| !matches!(e, Event::TrieUpdate { .. }))
        .for_each(|e| broken.apply(e));
    assert!(assert_trie_matches(&trie, &broken).is_err());
}

#[test]
fn ars_and_rsft_trie_views_match_too() {
    for s in [rejection::Strategy::Ars, rejection::Strategy::Rsft] {
        let (trie, events) = trie_run(Some(s), 40, 8);
        assert!(!trie.is_empty(), "{s:?}");
        let mut view = TrieView::default();
        events.iter().for_each(|e| view.apply(e));
        assert_trie_matches(&trie, &view).unwrap_or_else(|m| panic!("{s:?}: {m}"));
    }
}

#[test]
fn asap_trie_view_matches_the_samplers_c_tilde() {
    let (trie, events) = trie_run(None, 30, 5);
    let mut view = TrieView::default();
    events.iter().for_each(|e| view.apply(e));
    assert_trie_matches(&trie, &view).unwrap();
    let mut broken = TrieView::default();
    events
        .iter()
        .filter(|e| !matches!(e, Event::EfgUpdate { .. } | Event::TrieUpdate { .. }))
        .for_each(|e| broken.apply(e));
    assert!(assert_trie_matches(&trie, &broken).is_err());
}

#[test]
fn smc_rows_weights_and_lineage_match_the_samples() {
    let params = Params {
        n: 5,
        particles: 6,
        ess_threshold: 0.9,
        max_tokens: 6,
        ..Params::default()
    };
    let (r, views) = run(Method::AwrsSmc, params, 11, random);
    let samples = r.samples();
    assert_eq!(views.smc.runs.len(), 5);
    let events = r.events_from(0);
    let resamplings = events
        .iter()
        .filter(|e| matches!(e.event, Event::Resampled { .. }))
        .count();
    assert!(resamplings > 0, "the test needs resampling");
    assert_eq!(
        views
            .smc
            .runs
            .iter()
            .map(|r| r.lineage.len())
            .sum::<usize>(),
        resamplings
    );
    for (k, run_view) in views.smc.runs.iter().enumerate() {
        let mine: Vec<_> = samples.iter().filter(|s| s.run == Some(k)).collect();
        assert_eq!(run_view.rows.len(), mine.len());
        for (row, s) in run_view.rows.iter().zip(&mine) {
            assert_eq!(row.tokens, s.tokens, "run {k}");
            assert!((row.weight - s.weight.unwrap()).abs() < 1e-12, "run {k}");
        }
        assert!(run_view.log_evidence.is_some());
        assert!(
            run_view
                .ess
                .iter()
                .all(|&(_, e)| (0.0..=6.0 + 1e-9).contains(&e))
        );
    }
    // Lineage as the events gave it.
    let first: Vec<usize> = events
        .iter()
        .find_map(|e| match &e.event {
            Event::Resampled { ancestors, .. } => Some(ancestors.clone()),
            _ => None,
        })
        .unwrap();
    let lineage = views
        .smc
        .runs
        .iter()
        .flat_map(|r| r.lineage.iter())
        .next()
        .unwrap();
    assert_eq!(lineage.ancestors, first);
    // The lanes: one column per extension, each resampling drawn as M crossing links, and
    // following the links back from a final particle spells its tokens.
    for (k, run_view) in views.smc.runs.iter().enumerate() {
        let lanes = run_view.lanes(usize::MAX);
        let m = run_view.rows.len();
        assert_eq!(lanes.lanes, m);
        assert_eq!(lanes.columns.len(), run_view.ess.len(), "run {k}");
        let resampled = lanes.links.iter().filter(|l| l.resampled).count();
        assert_eq!(resampled, run_view.lineage.len() * m, "run {k}");
        for (i, row) in run_view.rows.iter().enumerate() {
            let mut lane = i;
            let mut tokens = Vec::new();
            for c in (0..lanes.columns.len()).rev() {
                if let Some(l) = lanes
                    .links
                    .iter()
                    .find(|l| l.column == c && l.to_lane == lane)
                {
                    lane = l.from_lane;
                }
                if let Some(t) = lanes.columns[c].cells[lane].0 {
                    tokens.push(t);
                }
            }
            tokens.reverse();
            assert_eq!(tokens, row.tokens, "run {k}, particle {i}");
        }
        let w: f64 = lanes
            .columns
            .last()
            .unwrap()
            .cells
            .iter()
            .map(|c| c.1)
            .sum();
        assert!(
            w == 0.0 || (w - 1.0).abs() < 1e-9,
            "normalized weights, run {k}"
        );
        let few = run_view.lanes(2);
        assert_eq!(few.columns.len(), 2.min(run_view.ess.len()));
        assert_eq!(few.hidden, run_view.ess.len() - few.columns.len());
    }
    // A view that ignores resampling ends with the wrong particles.
    let mut broken = Views::for_method(Labels::from_vocabulary(&random().2), Method::AwrsSmc);
    for e in events
        .iter()
        .filter(|e| !matches!(e.event, Event::Resampled { .. }))
    {
        broken.apply_recorded(e);
    }
    let broken_tokens: Vec<_> = broken
        .smc
        .runs
        .iter()
        .flat_map(|r| r.rows.iter().map(|row| row.tokens.clone()))
        .collect();
    let real: Vec<_> = samples.iter().map(|s| s.tokens.clone()).collect();
    assert_ne!(broken_tokens, real);
}

#[test]
fn mcmc_history_has_one_entry_per_step_and_ends_at_the_output() {
    let params = Params {
        n: 4,
        steps: 7,
        max_tokens: 6,
        ..Params::default()
    };
    for method in [
        Method::McmcUniform,
        Method::McmcRestart,
        Method::McmcPriority,
    ] {
        let (r, views) = run(method, params.clone(), 2, random);
        let samples = r.samples();
        assert_eq!(views.mcmc.chains.len(), 4, "{method}");
        for (c, s) in views.mcmc.chains.iter().zip(&samples) {
            assert_eq!(c.history.len(), 7, "{method}");
            assert!(c.finished);
            assert_eq!(c.current, s.tokens, "{method} chain {}", c.chain);
            // Each accepted proposal became the state.
            let last_accepted = c.history.iter().rev().find(|h| h.accepted).unwrap();
            assert_eq!(last_accepted.proposal, c.current);
        }
        // A view that takes every proposal is caught (when some were refused).
        if views
            .mcmc
            .chains
            .iter()
            .any(|c| c.history.iter().any(|h| !h.accepted))
        {
            let mut broken = Views::for_method(Labels::from_vocabulary(&random().2), method);
            for e in r.events_from(0) {
                let mut e = e.clone();
                if let Event::McmcProposal { accepted, .. } = &mut e.event {
                    *accepted = true;
                }
                broken.apply_recorded(&e);
            }
            let finals: Vec<_> = broken
                .mcmc
                .chains
                .iter()
                .map(|c| c.current.clone())
                .collect();
            let real: Vec<_> = samples.iter().map(|s| s.tokens.clone()).collect();
            assert_ne!(finals, real, "{method}");
        }
        if method == Method::McmcRestart {
            assert!(
                views
                    .mcmc
                    .chains
                    .iter()
                    .all(|c| c.history.iter().all(|h| h.cut == 0))
            );
        }
    }
    // The chains' states at each step, against P^L: on G_sk the initial GCD samples carry
    // masking's distortion (≈ 45% on 00000, whose P^L is ≈ 10⁻⁹) and the chains' law
    // approaches P^L as they run; the last point is the outputs' own distance.
    let (mut lm, c, _) = gsk();
    let exact = ground_truth_ready(&mut lm, &c, ExactLimits::toy(8)).unwrap();
    let long = Params {
        n: 60,
        steps: 30,
        max_tokens: 8,
        ..Params::default()
    };
    let (r, views) = run(Method::McmcUniform, long, 3, gsk);
    let points = views.mcmc.tv_by_step(&exact);
    assert_eq!(points.len(), 30);
    assert!(points.iter().all(|p| p.chains == 60));
    let mut outputs: std::collections::HashMap<Vec<sampler_core::TokenId>, f64> =
        std::collections::HashMap::new();
    for s in r.samples() {
        *outputs.entry(s.tokens.clone()).or_default() += 1.0 / 60.0;
    }
    assert!((points[29].tv - tv(&outputs, &exact)).abs() < 1e-12);
    let (first, last) = (points[0].tv, points[29].tv);
    assert!(first > 0.3, "the initial samples are masking's: TV {first}");
    assert!(
        last < first - 0.15,
        "the chains converge: TV {first} → {last}"
    );
    // K = 1: the initial GCD sample alone.
    let one = Params { steps: 1, ..params };
    let (r, views) = run(Method::McmcUniform, one, 2, random);
    for (c, s) in views.mcmc.chains.iter().zip(r.samples()) {
        assert_eq!(c.history.len(), 1);
        assert_eq!(c.current, s.tokens);
    }
}

#[test]
fn token_view_greys_masked_tokens_on_gsk() {
    let params = Params {
        n: 30,
        max_tokens: 8,
        ..Params::default()
    };
    let (r, _) = run(Method::Lcd, params, 4, gsk);
    let mut views = Views::for_method(Labels::from_vocabulary(&gsk().2), Method::Lcd);
    let mut saw_masked = false;
    for e in r.events_from(0) {
        views.apply_recorded(&e);
        if let Event::Token { kept_mass, .. } = &e.event {
            let t = &views.token;
            assert_eq!(t.kept_mass, *kept_mass);
            let drawn = t.drawn.as_ref().unwrap();
            assert!(drawn.allowed, "token masking never draws a masked token");
            if t.top.iter().any(|x| !x.allowed) {
                saw_masked = true;
                // After `0`, only `0` is allowed: Z = P(0) = 0.45 (the trap's 0.45e-8 after
                // `0000`); after five digits only EOS, which has all the mass: Z = 1.
                let z = kept_mass.unwrap();
                let masked: f64 = t.top.iter().filter(|x| !x.allowed).map(|x| x.p).sum();
                assert!((z + masked - 1.0).abs() < 1e-9, "Z = {z}, masked {masked}");
                assert!((z - 0.45).abs() < 1e-12 || z < 1e-8 || z == 1.0, "Z = {z}");
            }
        }
    }
    assert!(saw_masked, "a `0` first masks `1`");
    assert_eq!(views.token.sequence.last(), Some(&2));
}

#[test]
fn results_show_lcd_bias_and_cars_exactness_against_ground_truth() {
    let (mut lm, c, _) = gsk();
    let exact = ground_truth_ready(&mut lm, &c, ExactLimits::toy(8)).unwrap();
    let params = Params {
        n: 2000,
        max_tokens: 8,
        ..Params::default()
    };
    let (_, mut lcd) = run(Method::Lcd, params.clone(), 9, gsk);
    lcd.results.set_exact(&exact);
    let tv_lcd = tv(&lcd.results.empirical(), &exact);
    // Token masking moves ≈ 45% of the mass onto 00000 (binomial sd ≈ 0.011).
    assert!((tv_lcd - 0.45).abs() < 0.06, "TV(lcd) = {tv_lcd}");
    let (_, cars) = run(Method::Cars, params.clone(), 9, gsk);
    let tv_cars = tv(&cars.results.empirical(), &exact);
    // 16 outcomes, 2000 samples: E[TV] ≈ 0.03; 0.08 is far beyond it, far below lcd's.
    assert!(tv_cars < 0.08, "TV(cars) = {tv_cars}");
    assert_eq!(cars.results.valid, 2000);
    // Chi-square of CARS's counts against P^L (00000, with P^L ≈ 10⁻⁹, is pooled).
    let (counts, outside) = exact.counts(r_tokens(&cars).iter().map(|t| t.as_slice()));
    let chi = sampler_core::exact::chi_square(&counts, &exact.probs(), outside);
    assert!(chi.p_value > 1e-3, "CARS against P^L: {chi:?}");
    let (counts, outside) = exact.counts(r_tokens(&lcd).iter().map(|t| t.as_slice()));
    let chi = sampler_core::exact::chi_square(&counts, &exact.probs(), outside);
    assert!(chi.p_value < 1e-9, "token masking is caught: {chi:?}");
    // The KL curve exists once the exact target is known, one point per sample.
    let mut with_exact = Views::for_method(Labels::from_vocabulary(&gsk().2), Method::Cars);
    with_exact.results.set_exact(&exact);
    let (r, _) = run(Method::Cars, Params { n: 200, ..params }, 9, gsk);
    for e in r.events_from(0) {
        with_exact.apply_recorded(&e);
    }
    let kl = &with_exact.results.kl;
    assert_eq!(kl.len(), 200);
    assert!(kl.windows(2).all(|w| w[0].lm_calls <= w[1].lm_calls));
    assert!(
        kl.last().unwrap().kl < kl[9].kl,
        "KL falls as samples accumulate"
    );
    // LM calls per valid sample from the counters the samples carried.
    let last = r.samples().last().unwrap().counters;
    let per = with_exact.results.lm_calls_per_valid().unwrap();
    assert!((per - last.lm_calls as f64 / 200.0).abs() < 1e-12);
    // The chart: all 17 sequences of G_sk, drawn or not, shares summing to 1.
    let rows = with_exact.results.against(&exact, 100);
    assert_eq!(rows.len(), 17);
    assert!((rows.iter().map(|r| r.empirical).sum::<f64>() - 1.0).abs() < 1e-9);
    assert!((rows.iter().map(|r| r.exact).sum::<f64>() - 1.0).abs() < 1e-9);
    let trap = rows.iter().find(|r| r.text == "00000").unwrap();
    assert_eq!(trap.empirical, 0.0);
    let lcd_rows = lcd.results.against(&exact, 100);
    let trap = lcd_rows.iter().find(|r| r.text == "00000").unwrap();
    assert!((trap.empirical - 0.45).abs() < 0.06 && trap.exact < 1e-8);
    let sorted = lcd.results.sorted();
    assert_eq!(sorted[0].text, "00000");
    // Each output's exact P^L is shown beside it.
    assert!(
        with_exact
            .results
            .outputs
            .iter()
            .all(|o| o.exact_p.unwrap() > 0.0)
    );
}

/// Every sample of a run, expanded from the results view's distinct outputs.
fn r_tokens(v: &Views) -> Vec<Vec<sampler_core::TokenId>> {
    v.results
        .outputs
        .iter()
        .flat_map(|o| std::iter::repeat_n(o.tokens.clone(), o.count as usize))
        .collect()
}

#[test]
fn compare_mode_shows_lcd_bias_against_cars_at_equal_budget() {
    let state = example("toy-gsk").unwrap().state();
    let runs = Run::compare_from_state(&state).unwrap();
    assert_eq!(
        runs.iter().map(|r| r.method()).collect::<Vec<_>>(),
        vec![Method::Lcd, Method::Cars]
    );
    let (mut lm, c, v) = gsk();
    let exact = ground_truth_ready(&mut lm, &c, ExactLimits::toy(state.max_tokens)).unwrap();
    let mut tvs = Vec::new();
    for r in &runs {
        let o = r.drive_ready(&mut ToyModel::Gsk.lm(), &c, Some(&v));
        assert!(
            matches!(o, Outcome::BudgetReached | Outcome::Completed(_)),
            "{o:?}"
        );
        assert!(r.live_counters().lm_calls <= state.budget);
        let mut views = Views::for_method(Labels::from_vocabulary(&v), r.method());
        playground::player::Player::new(f64::INFINITY).to_end(r, &mut views);
        tvs.push(tv(&views.results.empirical(), &exact));
    }
    // lcd: 2000 calls / 6 per sample ≈ 333 samples, TV ≈ 0.45; cars: far more samples
    // (its trie caches P(·|u)), TV near 0.
    assert_eq!(runs[0].outcome(), Some(Outcome::BudgetReached));
    assert!(
        tvs[0] > 0.3 && tvs[1] < 0.1,
        "TV lcd {}, cars {}",
        tvs[0],
        tvs[1]
    );
}

#[test]
fn many_chains_and_runs_keep_only_the_latest() {
    let params = Params {
        n: 100,
        steps: 2,
        particles: 2,
        max_tokens: 6,
        ..Params::default()
    };
    let (r, views) = run(Method::McmcUniform, params.clone(), 1, random);
    assert_eq!(views.mcmc.chains.len(), playground::views::MAX_KEPT);
    assert_eq!(views.mcmc.dropped, 100 - playground::views::MAX_KEPT);
    let last = views.mcmc.chains.last().unwrap();
    assert_eq!(last.chain, 99);
    assert_eq!(last.current, r.samples().last().unwrap().tokens);
    let (_, views) = run(Method::AwrsSmc, params, 1, random);
    assert_eq!(views.smc.runs.len(), playground::views::MAX_KEPT);
    assert_eq!(views.smc.dropped, 100 - playground::views::MAX_KEPT);
    assert_eq!(views.smc.runs.last().unwrap().run, 99);
    // The MCMC view follows nothing for other methods when built for them.
    let (_, lcd) = run(
        Method::Lcd,
        Params {
            n: 10,
            ..Params::default()
        },
        1,
        random,
    );
    assert!(lcd.mcmc.chains.is_empty());
}

/// With few particles and frequent resampling, averaging each run's normalized ensemble is
/// far from P^L; weighting runs by their evidence (what the results view does) is not.
#[test]
fn smc_runs_are_combined_by_their_evidence() {
    let (mut lm, c, _) = random();
    let exact = ground_truth_ready(&mut lm, &c, ExactLimits::toy(6)).unwrap();
    let params = Params {
        n: 1000,
        particles: 8,
        ess_threshold: 0.99,
        max_tokens: 6,
        ..Params::default()
    };
    let (r, views) = run(Method::AwrsSmc, params, 5, random);
    let ours = tv(&views.results.empirical(), &exact);
    let samples = r.samples();
    let naive =
        playground::exact::empirical(samples.iter().map(|s| (s.tokens.as_slice(), s.weight)));
    let naive = tv(&naive, &exact);
    // 8,000 particles in 1,000 runs: the evidence-weighted TV was 0.007 at 2,000 runs.
    assert!(ours < 0.04, "evidence-weighted TV {ours}");
    assert!(naive > 0.2, "per-run average TV {naive}");
}

#[test]
fn smc_results_weigh_each_run_once() {
    let (_, views) = run(
        Method::AwrsSmc,
        Params {
            n: 3,
            particles: 4,
            max_tokens: 6,
            ..Params::default()
        },
        1,
        random,
    );
    // Runs count by their evidence Ĝ_r, relative to the largest.
    let ev = &views.results.evidence;
    assert_eq!(ev.len(), 3);
    let max = ev.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = ev.iter().map(|l| (l - max).exp()).sum();
    assert!((views.results.total_weight - total).abs() < 1e-9);
    assert_eq!(views.results.samples, 12);
}

#[test]
fn every_toy_example_and_its_link_reproduce_the_same_samples() {
    let draw = |s: &playground::state::PlaygroundState| {
        let toy = s.model.toy().unwrap();
        let v = toy.vocabulary();
        let c = build_constraint(s.grammar_kind, &s.grammar, &v).unwrap();
        let r = Run::from_state(s).unwrap();
        r.drive_ready(&mut toy.lm(), &c, Some(&v));
        r.samples()
    };
    let toys: Vec<_> = playground::examples::examples()
        .iter()
        .filter(|e| e.toy.is_some())
        .collect();
    assert!(
        toys.iter().any(|e| e.id == "toy-gsk"),
        "the opening example"
    );
    for e in toys {
        let state = e.state();
        let back = playground::permalink::decode(&playground::permalink::encode(&state)).unwrap();
        let a = draw(&state);
        assert!(!a.is_empty(), "{}", e.id);
        assert_eq!(a, draw(&back), "{}", e.id);
    }
}

/// Every method the page offers runs through the playground's runner on a compiled regex
/// and yields valid samples — `p-gcd-smc` included, whose guide needs the tensorized
/// automaton to come through the runner's counting wrapper and the constraint handle.
/// On a grammar (no automaton) it ends with a message instead.
#[test]
fn every_method_runs_on_a_compiled_regex_p_gcd_included() {
    let params = Params {
        n: 2,
        steps: 2,
        particles: 3,
        max_tokens: 6,
        ..Params::default()
    };
    for method in Method::ALL {
        let (r, views) = run(method, params.clone(), 3, random);
        // P-GCD's distillation reaches the view, iteration by iteration.
        if method == Method::PGcdSmc {
            let em = params.hmm.em_iterations;
            assert_eq!((views.hmm.done, views.hmm.total), (em, em));
            assert_eq!(views.hmm.log_likelihood.len(), em);
            // The guide's proposal at the latest step, and its mass per step of particle 0.
            let g = views.token.guide.as_ref().expect("P-GCD reports its guide");
            assert!(g.mask_mass > 0.0 && g.guide_mass > 0.0 && g.guide_mass <= 1.0 + 1e-9);
            assert!(!g.top.is_empty() && g.top.iter().map(|t| t.q).sum::<f64>() <= 1.0 + 1e-9);
            let steps = &views.token.guide_steps;
            assert!(!steps.is_empty());
            assert!(steps.iter().enumerate().all(|(i, s)| s.0 == i), "{steps:?}");
            assert_eq!(
                views.token.kept_mass,
                Some(g.mask_mass).filter(|_| g.particle == views.token.particle)
            );
        } else {
            assert!(!views.hmm.started(), "{method}");
            assert!(views.token.guide.is_none(), "{method}");
        }
        let samples = r.samples();
        assert!(!samples.is_empty(), "{method}");
        // Dead SMC particles come out with weight 0: only weighted samples must be valid.
        let weighted = samples.iter().filter(|s| s.weight != Some(0.0));
        if method != Method::Lm {
            assert!(weighted.clone().all(|s| s.valid), "{method}: {samples:?}");
        }
        // Twisted SMC may lose every particle on this language; P-GCD's guide must not.
        if method == Method::PGcdSmc {
            assert!(weighted.count() > 0, "{method}: {samples:?}");
        }
    }
    let v = TOY_RANDOM.vocabulary();
    let c = build_constraint(GrammarKind::Gbnf, "root ::= \"ab\" | \"ba\"", &v).unwrap();
    let r = Run::new(Method::PGcdSmc, params, 1);
    match r.drive_ready(&mut TOY_RANDOM.lm(), &c, Some(&v)) {
        Outcome::Failed(m) => assert!(m.contains("needs a regular constraint"), "{m}"),
        o => panic!("p-gcd-smc on a grammar: {o:?}"),
    }
}
