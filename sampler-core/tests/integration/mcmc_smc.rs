//! Faithfulness of MCMC and SMC against distributions computed without sampling.
//!
//! MCMC: the exact one-step transition matrix (every random path of one step enumerated)
//! leaves P^L stationary; TV to P^L falls with the number of steps. SMC: the evidence
//! estimate is unbiased and the weighted ensemble approaches P^L as particles grow.

use sampler_core::samplers::cut::with_off_by_one_cut;
use sampler_core::samplers::mcmc::{self, Kernel, ProposalScore, Trace, Truncation};
use sampler_core::samplers::path_enum::enumerate_paths;
use sampler_core::samplers::smc::{self, TokenProposal};
use sampler_core::samplers::{Io, Method, Params, Resampling, Sample, Sampler, with_quiet_ctx};
use sampler_core::toy::{FiniteLanguage, RandomLm, gsk_constraint, gsk_lm};
use sampler_core::{
    Constraint, Event, LanguageModel, NullSink, RandomSource, Regular, SampleError, SeededRng,
    TokenId, VecSink, Vocabulary, block_on,
};
use std::collections::BTreeMap;

type Dist = BTreeMap<Vec<TokenId>, f64>;

/// Exact P^L by depth-first search over the constraint (every tokenization), normalized;
/// also returns the unnormalized mass P(L).
fn exact_target<L: LanguageModel, C: Constraint>(lm: &mut L, c: &C, max_len: usize) -> (Dist, f64) {
    fn dfs<L: LanguageModel, C: Constraint>(
        lm: &mut L,
        c: &C,
        prefix: &mut Vec<TokenId>,
        state: C::State,
        logp: f64,
        max_len: usize,
        out: &mut Dist,
    ) {
        if prefix.len() >= max_len {
            return;
        }
        let lp = block_on(lm.logprobs(prefix)).unwrap();
        for t in 0..c.vocab_size() as TokenId {
            if lp[t as usize] == f64::NEG_INFINITY || !c.allows(&state, t) {
                continue;
            }
            prefix.push(t);
            if t == c.eos() {
                out.insert(prefix.clone(), (logp + lp[t as usize]).exp());
            } else {
                let next = c.advance(&state, t).unwrap();
                dfs(lm, c, prefix, next, logp + lp[t as usize], max_len, out);
            }
            prefix.pop();
        }
    }
    let mut out = Dist::new();
    dfs(lm, c, &mut Vec::new(), c.initial(), 0.0, max_len, &mut out);
    let z: f64 = out.values().sum();
    out.values_mut().for_each(|p| *p /= z);
    (out, z)
}

fn tv(a: &Dist, b: &Dist) -> f64 {
    let keys: std::collections::BTreeSet<_> = a.keys().chain(b.keys()).collect();
    0.5 * keys
        .into_iter()
        .map(|k| (a.get(k).unwrap_or(&0.0) - b.get(k).unwrap_or(&0.0)).abs())
        .sum::<f64>()
}

/// A four-token vocabulary with a two-character token: "a", "b", "ab", EOS.
fn small_vocab() -> Vocabulary {
    let toks = vec![b"a".to_vec(), b"b".to_vec(), b"ab".to_vec(), Vec::new()];
    Vocabulary::new(toks, 3, &[3])
}

/// Five strings with eight tokenizations between them.
fn small_language() -> FiniteLanguage {
    let words = ["a", "ab", "ba", "abb", "bab"];
    FiniteLanguage::new(
        small_vocab(),
        words.iter().map(|w| w.as_bytes().to_vec()).collect(),
    )
}

fn params() -> Params {
    Params {
        max_tokens: 8,
        ..Params::default()
    }
}

/// The exact transition matrix of one MH step: row w is the distribution of the next state.
fn transition_matrix<L: LanguageModel, C: Constraint>(
    lm: &mut L,
    c: &C,
    states: &[Vec<TokenId>],
    kernel: Kernel,
    max_tokens: usize,
) -> BTreeMap<Vec<TokenId>, Dist> {
    let p = Params {
        max_tokens,
        ..params()
    };
    let mut rows = BTreeMap::new();
    for w in states {
        let start: Trace<C::State> = with_quiet_ctx(lm, c, &mut SeededRng::new(0), &p, |ctx| {
            block_on(mcmc::score(ctx, w)).unwrap()
        });
        assert!(start.valid);
        let paths = enumerate_paths(100_000, |rng: &mut dyn RandomSource| {
            let mut s = start.clone();
            with_quiet_ctx(lm, c, rng, &p, |ctx| {
                block_on(mcmc::step(ctx, kernel, &mut s, 0, 1)).unwrap()
            });
            s.tokens
        })
        .unwrap();
        let mut row = Dist::new();
        for (prob, next) in paths {
            *row.entry(next).or_insert(0.0) += prob;
        }
        let total: f64 = row.values().sum();
        assert!((total - 1.0).abs() < 1e-12, "row of {w:?} sums to {total}");
        rows.insert(w.clone(), row);
    }
    rows
}

fn apply(d: &Dist, t: &BTreeMap<Vec<TokenId>, Dist>) -> Dist {
    let mut out = Dist::new();
    for (w, pw) in d {
        for (v, q) in &t[w] {
            *out.entry(v.clone()).or_insert(0.0) += pw * q;
        }
    }
    out
}

fn max_diff(a: &Dist, b: &Dist) -> f64 {
    a.keys()
        .chain(b.keys())
        .map(|k| (a.get(k).unwrap_or(&0.0) - b.get(k).unwrap_or(&0.0)).abs())
        .fold(0.0, f64::max)
}

/// P^L is stationary for the exact transition matrix of all three MCMC variants (to 1e-9),
/// also when q counts only the drawn cut (MH on the space extended with the cut is exact
/// too), and the mutant that drops q from the ratio is caught.
#[test]
fn mcmc_leaves_the_target_stationary_and_a_broken_ratio_does_not() {
    let c = small_language();
    for seed in [1, 2] {
        let mut lm = RandomLm::new(4, 3, 2, seed);
        let (target, _) = exact_target(&mut lm, &c, 8);
        assert_eq!(target.len(), 8, "eight tokenizations of five strings");
        let states: Vec<_> = target.keys().cloned().collect();
        for tr in [
            Truncation::Uniform,
            Truncation::Priority,
            Truncation::Restart,
        ] {
            for score in [
                ProposalScore::AllCuts,
                ProposalScore::DrawnCut,
                ProposalScore::Ignored,
            ] {
                let kernel = Kernel {
                    truncation: tr,
                    score,
                };
                let t = transition_matrix(&mut lm, &c, &states, kernel, 8);
                let d = max_diff(&apply(&target, &t), &target);
                eprintln!("seed {seed} {tr:?} {score:?}: max |πT − π| = {d:.2e}");
                if score == ProposalScore::Ignored {
                    assert!(d > 1e-3, "{tr:?}: the mutant without q passed ({d})");
                } else {
                    assert!(d < 1e-9, "{tr:?} {score:?}: πT differs from π by {d}");
                }
            }
        }
    }
}

/// The distribution of the GCD sample (the chain's state after one generation), exactly.
fn gcd_distribution<L: LanguageModel, C: Constraint>(lm: &mut L, c: &C) -> Dist {
    let p = params();
    let paths = enumerate_paths(100_000, |rng: &mut dyn RandomSource| {
        with_quiet_ctx(lm, c, rng, &p, |ctx| {
            block_on(mcmc::initial(ctx)).unwrap().tokens
        })
    })
    .unwrap();
    let mut d = Dist::new();
    for (prob, w) in paths {
        *d.entry(w).or_insert(0.0) += prob;
    }
    d
}

fn empirical(samples: &[Sample]) -> Dist {
    let mut d = Dist::new();
    for s in samples {
        *d.entry(s.tokens.clone()).or_insert(0.0) += 1.0 / samples.len() as f64;
    }
    d
}

fn draw(method: Method, p: &Params, seed: u64, sink: &mut VecSink) -> Vec<Sample> {
    let (mut lm, c) = (gsk_lm(), gsk_constraint());
    let mut out = Vec::new();
    block_on(Sampler::new(method).params(p).run(
        &mut lm,
        &c,
        Io {
            rng: &mut SeededRng::new(seed),
            sink,
            out: &mut |s| out.push(s.clone()),
        },
    ))
    .unwrap();
    out
}

/// On G_sk the exact TV to P^L after k generations falls monotonically (seed 000 Thm. 3),
/// and the empirical TV of 2000 chains at a fixed seed falls from k = 1 to 3 to 10.
#[test]
fn mcmc_tv_to_target_falls_with_steps_on_gsk() {
    let (mut lm, c) = (gsk_lm(), gsk_constraint());
    let (target, _) = exact_target(&mut lm, &c, 8);
    let states: Vec<_> = target.keys().cloned().collect();
    for (tr, method) in [
        (Truncation::Uniform, Method::McmcUniform),
        (Truncation::Priority, Method::McmcPriority),
        (Truncation::Restart, Method::McmcRestart),
    ] {
        let t = transition_matrix(&mut lm, &c, &states, Kernel::new(tr), 8);
        let mut d = gcd_distribution(&mut lm, &c);
        let mut exact = vec![tv(&d, &target)];
        for _ in 1..10 {
            d = apply(&d, &t);
            exact.push(tv(&d, &target));
        }
        eprintln!("{tr:?} exact TV by k=1..10: {exact:.4?}");
        assert!(exact.windows(2).all(|w| w[1] <= w[0] + 1e-12), "{exact:?}");
        assert!(exact[9] < 0.5 * exact[0]);
        let mut emp = Vec::new();
        for k in [1, 3, 10] {
            let p = Params {
                n: 2000,
                steps: k,
                max_tokens: 8,
                ..Params::default()
            };
            let mut sink = VecSink::default();
            let s = draw(method, &p, 7, &mut sink);
            assert!(s.iter().all(|s| s.valid));
            let proposals = sink
                .0
                .iter()
                .filter(|e| matches!(e, Event::McmcProposal { .. }));
            assert_eq!(proposals.count(), 2000 * (k - 1));
            emp.push(tv(&empirical(&s), &target));
        }
        eprintln!("{tr:?} empirical TV (2000 chains) at k = 1, 3, 10: {emp:.4?}");
        assert!(emp[0] > emp[1] && emp[1] > emp[2], "{emp:?}");
    }
}

/// Runs `method` and returns its samples and the evidence estimates, one per SMC run.
fn smc_runs<L: LanguageModel, C: Constraint>(
    method: Method,
    p: &Params,
    lm: &mut L,
    c: &C,
    seed: u64,
) -> (Vec<Sample>, Vec<f64>) {
    let (mut sink, mut out) = (VecSink::default(), Vec::new());
    block_on(Sampler::new(method).params(p).run(
        lm,
        c,
        Io {
            rng: &mut SeededRng::new(seed),
            sink: &mut sink,
            out: &mut |s| out.push(s.clone()),
        },
    ))
    .unwrap();
    let ev = sink
        .0
        .iter()
        .filter_map(|e| match e {
            Event::Evidence { log_evidence, .. } => Some(log_evidence.exp()),
            _ => None,
        })
        .collect();
    (out, ev)
}

/// Ĝ is unbiased for P(L): over 2000 runs of 4 particles its mean is within 3 standard
/// errors of the exact mass, for every proposal and both resampling schemes.
#[test]
fn smc_evidence_is_unbiased() {
    let c = small_language();
    let mut lm = RandomLm::new(4, 3, 2, 1);
    let (_, z) = exact_target(&mut lm, &c, 8);
    for method in [
        Method::AwrsSmc,
        Method::WrsSmc,
        Method::SmcGcd,
        Method::TwistedSmc,
    ] {
        for resampling in [Resampling::Multinomial, Resampling::Stratified] {
            let p = Params {
                n: 2000,
                particles: 4,
                max_tokens: 8,
                resampling,
                ..Params::default()
            };
            let (samples, ev) = smc_runs(method, &p, &mut lm, &c, 5);
            assert_eq!((samples.len(), ev.len()), (8000, 2000));
            let n = ev.len() as f64;
            let mean = ev.iter().sum::<f64>() / n;
            let se = (ev.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
            eprintln!(
                "{method} {resampling:?}: mean Ĝ = {mean:.5} ± {se:.5} (exact P(L) = {z:.5})"
            );
            assert!((mean - z).abs() < 3.0 * se, "{method} {resampling:?}");
            // Every run's weights are normalized (or all 0 when every particle died) and
            // only valid particles carry weight.
            for (run, g) in samples.chunks(4).zip(&ev) {
                let w: f64 = run.iter().map(|s| s.weight.unwrap()).sum();
                assert!((w - if *g > 0.0 { 1.0 } else { 0.0 }).abs() < 1e-9);
                assert!(run.iter().all(|s| s.valid || s.weight == Some(0.0)));
            }
        }
    }
}

/// The pooled weighted ensemble (normalized over the runs that did not die) approaches
/// P^L as the particles grow: on G_sk, where token masking is biased by TV 0.45, TV falls
/// from M = 1 to 4 to 16 (1000 runs each).
#[test]
fn smc_ensemble_approaches_the_target_as_particles_grow() {
    let (mut lm, c) = (gsk_lm(), gsk_constraint());
    let (target, _) = exact_target(&mut lm, &c, 8);
    for method in [Method::SmcGcd, Method::AwrsSmc, Method::TwistedSmc] {
        let mut tvs = Vec::new();
        for m in [1, 4, 16] {
            let p = Params {
                n: 1000,
                particles: m,
                max_tokens: 8,
                ..Params::default()
            };
            let (samples, _) = smc_runs(method, &p, &mut lm, &c, 9);
            let mut pooled = Dist::new();
            for s in &samples {
                *pooled.entry(s.tokens.clone()).or_insert(0.0) += s.weight.unwrap() / 1000.0;
            }
            pooled.retain(|_, w| *w > 0.0);
            let total: f64 = pooled.values().sum();
            pooled.values_mut().for_each(|w| *w /= total);
            tvs.push(tv(&pooled, &target));
        }
        eprintln!("{method}: TV of the pooled ensemble at M = 1, 4, 16: {tvs:.4?}");
        assert!(tvs[0] > tvs[1] && tvs[1] > tvs[2], "{method}: {tvs:?}");
    }
}

/// Particles with the same tokens share their step's mask: on a language of one string
/// with one tokenization every particle has the same tokens at every step, so a run of 4
/// particles computes as many masks (each counted as vocabulary-size checks) as a run of 1 and
/// draws the same string with the same weights; the proper weighting of shared steps is
/// checked exactly by `smc_is_properly_weighted_by_path_enumeration` (resampling at every
/// step makes copies there).
#[test]
fn smc_particles_with_the_same_tokens_share_their_mask() {
    let c = FiniteLanguage::new(small_vocab(), vec![b"bbb".to_vec()]);
    let mut lm = RandomLm::new(4, 3, 2, 1);
    let run = |lm: &mut RandomLm, particles| {
        let p = Params {
            particles,
            max_tokens: 8,
            ..Params::default()
        };
        smc_runs(Method::SmcGcd, &p, lm, &c, 3).0
    };
    let (one, four) = (run(&mut lm, 1), run(&mut lm, 4));
    assert_eq!(four.len(), 4);
    for s in &four {
        assert_eq!((&s.tokens, s.valid), (&one[0].tokens, true));
        assert!((s.weight.unwrap() - 0.25).abs() < 1e-12);
    }
    let checks = |s: &[Sample]| s.last().unwrap().counters.constraint_checks;
    // 4 steps (b, b, b, EOS), one mask of 4 tokens each, and each particle's 3 advances
    // (one check each); without sharing, 4 particles would compute 4 masks a step (76).
    assert_eq!(checks(&one), 4 * 4 + 3);
    assert_eq!(checks(&four), 4 * 4 + 4 * 3);
}

/// When every particle dies the run still ends: weights 0, evidence 0, no endless loop.
#[test]
fn smc_with_every_particle_dead_ends_with_zero_evidence() {
    let v = sampler_core::toy::gsk_vocabulary();
    let c = FiniteLanguage::new(v, vec![b"000000".to_vec()]);
    let mut lm = gsk_lm();
    let p = Params {
        particles: 3,
        ..Params::default()
    };
    let (samples, ev) = smc_runs(Method::TwistedSmc, &p, &mut lm, &c, 1);
    assert_eq!(ev, vec![0.0]);
    assert!(samples.iter().all(|s| !s.valid && s.weight == Some(0.0)));
}

/// Runs whose every particle died are said once, in words, as an `Estimate` event (the
/// page and the CLI show it); runs with a valid particle say nothing.
#[test]
fn smc_says_when_every_particle_died() {
    let estimates = |c: &FiniteLanguage, n| {
        let (mut sink, mut lm) = (VecSink::default(), gsk_lm());
        let p = Params {
            n,
            particles: 3,
            ..Params::default()
        };
        block_on(Sampler::new(Method::TwistedSmc).params(&p).run(
            &mut lm,
            c,
            Io {
                rng: &mut SeededRng::new(1),
                sink: &mut sink,
                out: &mut |_| {},
            },
        ))
        .unwrap();
        sink.0
            .into_iter()
            .filter_map(|e| match e {
                Event::Estimate {
                    log_mass, message, ..
                } => Some((log_mass, message)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let v = sampler_core::toy::gsk_vocabulary();
    let dead = estimates(&FiniteLanguage::new(v.clone(), vec![b"000000".to_vec()]), 2);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].0, f64::NEG_INFINITY);
    assert!(
        dead[0]
            .1
            .starts_with("twisted-smc: in 2 of the 2 runs every particle ended without"),
        "{}",
        dead[0].1
    );
    assert!(estimates(&gsk_constraint(), 2).is_empty());
}

/// Exactly, by enumerating every random path of a run that resamples at every step:
/// E[Ĝ] = P(L) and E[Ĝ·Σ_m w̄_m 1{x_m = w}] = P(w)·1_L(w) for every w (the ensemble is
/// properly weighted), to 1e-12: masking and twisted with 2 particles; AWRS (whose
/// rejection orders multiply the paths: 43,659 for one particle) on a two-string language
/// with 1 particle.
#[test]
fn smc_is_properly_weighted_by_path_enumeration() {
    let two = FiniteLanguage::new(small_vocab(), vec![b"ab".to_vec(), b"ba".to_vec()]);
    let mut lm = RandomLm::new(4, 3, 2, 3);
    for (proposal, particles, tau, c) in [
        (TokenProposal::Mask, 2, 1.0, small_language()),
        (TokenProposal::Twisted, 2, 1.0, small_language()),
        (TokenProposal::Awrs, 1, 1.0, two),
    ] {
        let (target, z) = exact_target(&mut lm, &c, 8);
        let p = Params {
            particles,
            max_tokens: 8,
            ess_threshold: tau,
            ..Params::default()
        };
        let paths = enumerate_paths(300_000, |rng: &mut dyn RandomSource| {
            with_quiet_ctx(&mut lm, &c, rng, &p, |ctx| {
                block_on(smc::run_once(ctx, proposal, 0)).unwrap()
            })
        })
        .unwrap();
        let (mut mean_g, mut weighted) = (0.0, Dist::new());
        for (prob, r) in &paths {
            let g = r.log_evidence.exp();
            mean_g += prob * g;
            for (x, w) in r.tokens.iter().zip(&r.weights) {
                *weighted.entry(x.clone()).or_insert(0.0) += prob * g * w;
            }
        }
        weighted.retain(|_, w| *w != 0.0);
        let unnormalized: Dist = target.iter().map(|(k, v)| (k.clone(), v * z)).collect();
        let d = max_diff(&weighted, &unnormalized);
        eprintln!(
            "{proposal:?} M={particles}: {} paths, E[Ĝ] = {mean_g:.12} vs P(L) = {z:.12}, \
             max weighted diff {d:.1e}",
            paths.len()
        );
        assert!((mean_g - z).abs() < 1e-12);
        assert!(d < 1e-12);
    }
}

/// A finite language that answers budget masks (as a regular constraint does), by the
/// fewest tokens that complete each prefix: a test double for `smc-gcd`'s budget proposal.
struct BudgetFinite(FiniteLanguage);

impl BudgetFinite {
    /// Fewest tokens (EOS included) that complete `state`, `None` when it cannot be.
    fn min_completion(&self, state: &Vec<u8>) -> Option<usize> {
        if self.0.is_complete(state) {
            return Some(1);
        }
        (0..self.0.vocab_size() as TokenId)
            .filter(|&t| t != self.0.eos())
            .filter_map(|t| self.0.advance(state, t))
            .filter_map(|s| self.min_completion(&s))
            .min()
            .map(|n| n + 1)
    }
}

impl Constraint for BudgetFinite {
    type State = Vec<u8>;
    fn vocab_size(&self) -> usize {
        self.0.vocab_size()
    }
    fn eos(&self) -> TokenId {
        self.0.eos()
    }
    fn initial(&self) -> Vec<u8> {
        Vec::new()
    }
    fn advance(&self, s: &Vec<u8>, t: TokenId) -> Option<Vec<u8>> {
        self.0.advance(s, t)
    }
    fn is_complete(&self, s: &Vec<u8>) -> bool {
        self.0.is_complete(s)
    }
    fn regular(&self) -> Option<&dyn Regular<Vec<u8>>> {
        Some(self)
    }
}

impl Regular<Vec<u8>> for BudgetFinite {
    fn budget_mask(&self, s: &Vec<u8>, remaining: usize) -> sampler_core::TokenSet {
        let mut m = sampler_core::TokenSet::empty(self.vocab_size());
        for t in 0..self.vocab_size() as TokenId {
            let ok = if t == self.eos() {
                self.is_complete(s) && remaining >= 1
            } else {
                self.advance(s, t)
                    .and_then(|n| self.min_completion(&n))
                    .is_some_and(|k| k < remaining)
            };
            if ok {
                m.insert(t);
            }
        }
        m
    }
}

/// `smc-gcd` uses the budget mask on a regular constraint: with `max_tokens` = 3 the
/// 4-token tokenizations are out of reach, yet no particle dies at the budget (every
/// sample valid), the ensemble is properly weighted for P^L restricted to length ≤ 3
/// (exactly, by path enumeration), and Ĝ is unbiased over 2000 runs.
#[test]
fn smc_gcd_with_the_budget_mask_on_a_regular_constraint() {
    let c = BudgetFinite(small_language());
    let mut lm = RandomLm::new(4, 3, 2, 4);
    let (target, z) = exact_target(&mut lm, &c, 3);
    assert_eq!(
        target.len(),
        6,
        "two of eight tokenizations need four tokens"
    );
    let p = Params {
        particles: 2,
        max_tokens: 3,
        ess_threshold: 1.0,
        ..Params::default()
    };
    let paths = enumerate_paths(300_000, |rng: &mut dyn RandomSource| {
        with_quiet_ctx(&mut lm, &c, rng, &p, |ctx| {
            block_on(smc::run_once(ctx, TokenProposal::BudgetMask, 0)).unwrap()
        })
    })
    .unwrap();
    let mut mean_g = 0.0;
    for (prob, r) in &paths {
        mean_g += prob * r.log_evidence.exp();
        assert!(r.tokens.iter().all(|t| target.contains_key(t)));
    }
    eprintln!("budget mask: E[Ĝ] = {mean_g:.12}, P(L, ≤ 3 tokens) = {z:.12}");
    assert!((mean_g - z).abs() < 1e-12);
    let p = Params { n: 2000, ..p };
    let (samples, ev) = smc_runs(Method::SmcGcd, &p, &mut lm, &c, 2);
    assert!(samples.iter().all(|s| s.valid));
    let n = ev.len() as f64;
    let mean = ev.iter().sum::<f64>() / n;
    let se = (ev.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
    eprintln!("smc-gcd (budget): mean Ĝ = {mean:.5} ± {se:.5}, exact {z:.5}");
    assert!((mean - z).abs() < 3.0 * se);
}

/// Where the max-tokens cut removes tokenizations (max 3: a·b·b and b·a·b need four tokens
/// with EOS), P^L restricted to the cut is stationary for every MCMC variant; with the cut
/// one token too strict (the off-by-one mutant) the chain never proposes the three-token
/// sequences, and stationarity fails.
#[test]
fn mcmc_is_stationary_within_the_cut_and_an_off_by_one_is_caught() {
    let c = small_language();
    let mut lm = RandomLm::new(4, 3, 2, 1);
    let (target, _) = exact_target(&mut lm, &c, 3);
    assert_eq!(target.len(), 6, "two of eight tokenizations are cut");
    assert!(target.keys().any(|w| w.len() == 3));
    let states: Vec<_> = target.keys().cloned().collect();
    for tr in [
        Truncation::Uniform,
        Truncation::Priority,
        Truncation::Restart,
    ] {
        let kernel = Kernel::new(tr);
        let t = transition_matrix(&mut lm, &c, &states, kernel, 3);
        let d = max_diff(&apply(&target, &t), &target);
        assert!(d < 1e-9, "{tr:?}: max |πT − π| = {d:.2e}");
        let t = with_off_by_one_cut(|| transition_matrix(&mut lm, &c, &states, kernel, 3));
        let d = max_diff(&apply(&target, &t), &target);
        assert!(d > 1e-3, "{tr:?}: the off-by-one cut passed ({d:.2e})");
    }
}

/// An MCMC chain whose first sample hits the cut and never finds a valid proposal ends
/// the run with a message naming the cut, not with an invalid sample.
#[test]
fn an_mcmc_chain_outside_the_cut_says_so() {
    // G_sk's model writes five tokens before EOS: a cut at 4 leaves no valid sequence
    // that GCD can reach, so every chain stays outside the target.
    let p = Params {
        n: 1,
        steps: 3,
        max_tokens: 4,
        ..Params::default()
    };
    let mut sink = VecSink::default();
    let e = block_on(Sampler::new(Method::McmcUniform).params(&p).run(
        &mut gsk_lm(),
        &gsk_constraint(),
        Io {
            rng: &mut SeededRng::new(0),
            sink: &mut sink,
            out: &mut |_| panic!("no sample may come out"),
        },
    ))
    .unwrap_err();
    assert!(
        matches!(
            e,
            SampleError::ChainOutsideCut {
                chain: 0,
                max_tokens: 4,
                steps: 3
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("raise --max-tokens"), "{e}");
    assert!(
        sink.0
            .iter()
            .any(|ev| matches!(ev, Event::Note { message } if message.contains("without EOS")))
    );
}

/// MCMC through `run`: one output per chain with its index, `n·steps` generations counted,
/// and an initial GCD dead end reported as an error rather than a loop.
#[test]
fn mcmc_run_counts_generations_and_reports_dead_ends() {
    let p = Params {
        n: 3,
        steps: 4,
        max_tokens: 8,
        ..Params::default()
    };
    let mut sink = VecSink::default();
    let s = draw(Method::McmcPriority, &p, 1, &mut sink);
    assert_eq!(
        s.iter().map(|s| s.run).collect::<Vec<_>>(),
        vec![Some(0), Some(1), Some(2)]
    );
    assert_eq!(s[2].counters.generations, 12);
    let v = sampler_core::toy::gsk_vocabulary();
    let c = FiniteLanguage::new(v, vec![b"000000".to_vec()]);
    let e = block_on(Sampler::new(Method::McmcUniform).params(&p).run(
        &mut gsk_lm(),
        &c,
        Io {
            rng: &mut SeededRng::new(0),
            sink: &mut NullSink,
            out: &mut |_| {},
        },
    ))
    .unwrap_err();
    assert!(e.to_string().starts_with("dead end"), "{e}");
}

/// `awrs-lcd` is token masking's distribution drawn by rejection: on G_sk it shows the
/// same bias as `lcd` (first token `0` 45% of the time, then trapped into `00000`).
#[test]
fn awrs_lcd_shows_the_gsk_bias_of_token_masking() {
    let p = Params {
        n: 2000,
        ..Params::default()
    };
    let s = draw(Method::AwrsLcd, &p, 3, &mut VecSink::default());
    assert!(s.iter().all(|s| s.valid && s.tokens.len() == 6));
    let zeros = s.iter().filter(|s| s.tokens[..5] == [0; 5]).count() as f64;
    // Binomial(2000, 0.45): sd ≈ 22; 5 sd either side.
    assert!((zeros - 900.0).abs() < 112.0, "00000 drawn {zeros} times");
}

/// `auto` by enumerating every random path of a whole run (n = 1, at most 3 tokens, one
/// particle, and a rule that hands over after two generations without a valid one, so
/// that each ending happens on some paths): where CARS gave the sample it is exactly P^L,
/// and where weighted SMC took over its run is properly weighted, E[Ĝ·Σ w̄·1{x = w}] =
/// P(L)·P^L(w), both to 1e-12. The mutant that hands over to token masking is caught.
/// A path of a whole run: its probability, then its events and samples.
type RunPath = (f64, (Vec<Event>, Vec<Sample>));

/// Every random path of whole `auto` runs with `rule`.
fn auto_paths(
    lm: &mut RandomLm,
    c: &FiniteLanguage,
    p: &Params,
    rule: sampler_core::samplers::auto::Rule,
) -> Vec<RunPath> {
    use sampler_core::samplers::{Ctx, auto};
    enumerate_paths(1_000_000, |rng: &mut dyn RandomSource| {
        let (mut sink, mut out) = (VecSink::default(), Vec::new());
        let mut push = |s: &Sample| out.push(s.clone());
        let mut ctx = Ctx::new(&mut *lm, c, rng, &mut sink, p, None, &mut push);
        block_on(auto::run_with(&mut ctx, rule)).unwrap();
        (sink.0, out)
    })
    .unwrap()
}

/// When every particle of a weighted run dies, `auto` goes back to CARS for the samples
/// left, and those are exactly P^L. On {a, b, bbbb} with at most 3 tokens, bbbb cannot fit,
/// so a masked particle that writes b then b dies at the limit. By enumerating every path
/// (two samples, one particle, a rule that hands over after one generation), the samples
/// drawn after the return to CARS follow P^L to 1e-12, each valid.
#[test]
fn auto_goes_back_to_exact_sampling_when_a_weighted_run_dies_whole() {
    use sampler_core::samplers::auto::Rule;
    let words = vec![b"a".to_vec(), b"b".to_vec(), b"bbbb".to_vec()];
    let c = FiniteLanguage::new(small_vocab(), words);
    let mut lm = RandomLm::new(4, 3, 2, 5);
    let (target, _) = exact_target(&mut lm, &c, 3);
    let p = Params {
        n: 2,
        particles: 1,
        max_tokens: 3,
        ..Params::default()
    };
    let rule = Rule {
        min_generations: 1,
        max_generations: 1.0,
        mask_instead: false,
    };
    let paths = auto_paths(&mut lm, &c, &p, rule);
    let (mut p_back, mut back) = (0.0, Dist::new());
    for (prob, (events, samples)) in &paths {
        let Some(at) = events.iter().position(|e| {
            matches!(e, Event::Estimate { method, message, .. }
                if method == "cars" && message.contains("died"))
        }) else {
            continue;
        };
        p_back += prob;
        let k = events[at..]
            .iter()
            .filter(|e| matches!(e, Event::SampleFinished { .. }))
            .count();
        assert!(k >= 1 && k <= samples.len());
        for s in &samples[samples.len() - k..] {
            assert!(s.valid && s.weight.is_none(), "{s:?}");
            *back.entry(s.tokens.clone()).or_insert(0.0) += prob / k as f64;
        }
    }
    assert!(p_back > 0.01, "P(back to CARS) {p_back}");
    back.values_mut().for_each(|v| *v /= p_back);
    let d = max_diff(&back, &target);
    eprintln!(
        "auto back to CARS: {} paths, P {p_back:.4}, diff {d:.1e}",
        paths.len()
    );
    assert!(d < 1e-12, "{d}");
}

#[test]
fn auto_is_exact_or_properly_weighted_given_its_choice_by_path_enumeration() {
    use sampler_core::samplers::auto::Rule;
    let c = FiniteLanguage::new(small_vocab(), vec![b"a".to_vec(), b"ba".to_vec()]);
    let mut lm = RandomLm::new(4, 3, 2, 3);
    let (target, z) = exact_target(&mut lm, &c, 3);
    let p = Params {
        n: 1,
        particles: 1,
        max_tokens: 3,
        ..Params::default()
    };
    for mask_instead in [false, true] {
        let rule = Rule {
            min_generations: 1,
            max_generations: 1.0,
            mask_instead,
        };
        let paths = auto_paths(&mut lm, &c, &p, rule);
        let (mut p_exact, mut p_rest) = (0.0, 0.0);
        let (mut exact, mut rest) = (Dist::new(), Dist::new());
        for (prob, (events, samples)) in &paths {
            let handed_over = events.iter().any(|e| {
                matches!(e, Event::Estimate { method, message, .. }
                    if method == "smc-gcd" && message.contains("draws the rest"))
            });
            let evidence = events.iter().find_map(|e| match e {
                Event::Evidence { log_evidence, .. } => Some(log_evidence.exp()),
                _ => None,
            });
            if !handed_over {
                p_exact += prob;
                assert_eq!(samples.len(), 1);
                *exact.entry(samples[0].tokens.clone()).or_insert(0.0) += prob;
                continue;
            }
            p_rest += prob;
            for s in samples {
                // A weighted run counts Ĝ·w̄ (unnormalized); anything else counts as an
                // exact sample would, scaled by P(L) to compare alike.
                let w = match (s.weight, evidence) {
                    (Some(w), Some(g)) => g * w,
                    _ => z * f64::from(u8::from(s.valid)),
                };
                *rest.entry(s.tokens.clone()).or_insert(0.0) += prob * w;
            }
        }
        assert!(
            p_exact > 0.01 && p_rest > 0.01,
            "P(exact) {p_exact}, P(handover) {p_rest}"
        );
        exact.values_mut().for_each(|v| *v /= p_exact);
        rest.values_mut().for_each(|v| *v /= p_rest);
        rest.retain(|_, w| *w != 0.0);
        let unnormalized: Dist = target.iter().map(|(k, v)| (k.clone(), v * z)).collect();
        let (d_exact, d_rest) = (max_diff(&exact, &target), max_diff(&rest, &unnormalized));
        eprintln!(
            "auto (mask instead: {mask_instead}): {} paths, P(exact) {p_exact:.4}, exact diff \
             {d_exact:.1e}, after the handover {d_rest:.1e}",
            paths.len()
        );
        assert!(d_exact < 1e-12, "{d_exact}");
        if mask_instead {
            assert!(d_rest > 1e-3, "mutant not caught: {d_rest}");
        } else {
            assert!(d_rest < 1e-12, "{d_rest}");
        }
    }
}

/// Chains run side by side (`batch` > 1: their generations in lockstep, one batched model
/// call a token) stay exact and independent: every random path of a whole run of two
/// chains enumerated, the pair of samples is distributed as the product of two chains'
/// exact law after two generations (GCD, then one step of the exact transition matrix),
/// to 1e-12, in lockstep as one after another.
#[test]
fn mcmc_chains_in_lockstep_are_exact_and_independent() {
    let c = small_language();
    let mut lm = RandomLm::new(4, 3, 2, 1);
    let (target, _) = exact_target(&mut lm, &c, 8);
    let states: Vec<_> = target.keys().cloned().collect();
    let (tr, method) = (Truncation::Restart, Method::McmcRestart);
    let t = transition_matrix(&mut lm, &c, &states, Kernel::new(tr), 8);
    let after_two = apply(&gcd_distribution(&mut lm, &c), &t);
    for batch in [1, 2] {
        let p = Params {
            n: 2,
            steps: 2,
            batch,
            ..params()
        };
        let paths = enumerate_paths(2_000_000, |rng: &mut dyn RandomSource| {
            let mut out = Vec::new();
            block_on(Sampler::new(method).params(&p).run(
                &mut lm,
                &c,
                Io {
                    rng,
                    sink: &mut NullSink,
                    out: &mut |s| out.push(s.tokens.clone()),
                },
            ))
            .unwrap();
            out
        })
        .unwrap();
        let mut joint: BTreeMap<Vec<Vec<TokenId>>, f64> = BTreeMap::new();
        for (prob, pair) in paths {
            assert_eq!(pair.len(), 2, "one sample per chain");
            *joint.entry(pair).or_insert(0.0) += prob;
        }
        let mut worst = 0f64;
        for (a, pa) in &after_two {
            for (b, pb) in &after_two {
                let got = joint.remove(&vec![a.clone(), b.clone()]).unwrap_or(0.0);
                worst = worst.max((got - pa * pb).abs());
            }
        }
        let stray: f64 = joint.values().sum();
        assert!(
            worst < 1e-12,
            "batch {batch}: max |joint − product| = {worst:.2e}"
        );
        assert!(
            stray < 1e-12,
            "batch {batch}: {stray:.2e} on pairs outside the target"
        );
    }
}
