//! P-GCD against quantities computed without sampling: the guide's satisfiability
//! probability against a brute-force sum over continuations, and `p-gcd-smc`'s evidence
//! and ensemble against the exact P^L, with the mutant that forgets to divide by the guide.

use super::{Guide, Hmm, HmmConfig};
use crate::samplers::path_enum::enumerate_paths;
use crate::samplers::smc::{self, TokenProposal};
use crate::samplers::{Io, Method, Params, Sampler, with_quiet_ctx};
use crate::toy::{RandomLm, gsk_lm, gsk_vocabulary};
use crate::{
    Constraint, Event, LanguageModel, NullSink, RandomSource, RegexConstraint, SeededRng, TokenId,
    VecSink, Vocabulary, block_on,
};
use std::collections::BTreeMap;

type Dist = BTreeMap<Vec<TokenId>, f64>;

/// "a", "b", "ab", EOS.
fn small_vocab() -> Vocabulary {
    let toks = vec![b"a".to_vec(), b"b".to_vec(), b"ab".to_vec(), Vec::new()];
    Vocabulary::new(toks, 3, &[3])
}

/// Five strings, eight tokenizations; with 3 tokens (EOS included) only six fit.
fn small_language() -> RegexConstraint {
    RegexConstraint::from_regex("a|ab|ba|abb|bab", &small_vocab()).unwrap()
}

/// Every valid token sequence of at most `max_len` tokens with P(w) (unnormalized), by
/// depth-first search over the constraint; and their total mass Z.
fn exact_mass<L: LanguageModel, C: Constraint>(lm: &mut L, c: &C, max_len: usize) -> (Dist, f64) {
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
            if !c.allows(&state, t) {
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
    let z = out.values().sum();
    (out, z)
}

/// Σ over every continuation w = v·w' (at most `budget` tokens, EOS last and only last)
/// with u·w valid, of P_HMM(u·w) / P_HMM(u·v): the guide's g(v), by brute force.
fn brute_sat<C: Constraint>(hmm: &Hmm, c: &C, u: &[TokenId], v: TokenId, budget: usize) -> f64 {
    fn walk<C: Constraint>(
        hmm: &Hmm,
        c: &C,
        seq: &mut Vec<TokenId>,
        state: C::State,
        left: usize,
    ) -> f64 {
        // `seq` ends with a non-EOS token; `left` more tokens may follow.
        let mut total = 0.0;
        if left == 0 {
            return 0.0;
        }
        for t in 0..c.vocab_size() as TokenId {
            if !c.allows(&state, t) {
                continue;
            }
            seq.push(t);
            if t == c.eos() {
                total += hmm.log_likelihood(seq).exp();
            } else {
                let next = c.advance(&state, t).unwrap();
                total += walk(hmm, c, seq, next, left - 1);
            }
            seq.pop();
        }
        total
    }
    let mut state = c.initial();
    for &t in u {
        state = c.advance(&state, t).unwrap();
    }
    if budget == 0 || !c.allows(&state, v) {
        return 0.0;
    }
    let mut seq: Vec<TokenId> = u.to_vec();
    seq.push(v);
    let denom = hmm.log_likelihood(&seq).exp();
    let num = if v == c.eos() {
        denom
    } else {
        let next = c.advance(&state, v).unwrap();
        walk(hmm, c, &mut seq, next, budget - 1)
    };
    num / denom
}

/// g(v) from the HMM × automaton backward pass equals the brute-force sum over every
/// continuation within the budget, for every viable prefix of up to two tokens, every next
/// token and budgets 1..6, on an infinite language (so the budget matters); tokens the
/// guide leaves out are exactly those with brute-force mass 0. Also the guide's
/// P(satisfiable) before the next token.
#[test]
fn guide_matches_brute_force_over_continuations() {
    let vocab = small_vocab();
    let c = RegexConstraint::from_regex("(ab|ba)+b?", &vocab).unwrap();
    let hmm = Hmm::random(3, vocab.len(), &mut SeededRng::new(7));
    let guide = Guide::new(hmm.clone(), c.tensorized().unwrap(), 8, 1e-6).unwrap();
    let mut prefixes: Vec<Vec<TokenId>> = vec![vec![]];
    for a in 0..3 {
        prefixes.push(vec![a]);
        for b in 0..3 {
            prefixes.push(vec![a, b]);
        }
    }
    let mut checked = 0;
    for u in prefixes {
        let mut state = c.initial();
        let mut belief = guide.initial_belief();
        let mut ok = true;
        for &t in &u {
            match c.advance(&state, t) {
                Some(s) => state = s,
                None => ok = false,
            }
            belief = guide.advance_belief(&belief, t);
        }
        if !ok {
            continue;
        }
        let s = c.tensor_state(&state).unwrap();
        for budget in 1..=6 {
            let allowed: BTreeMap<TokenId, f64> = guide
                .allowed(&belief, s, budget)
                .iter()
                .map(|g| (g.token, g.log_sat.exp()))
                .collect();
            let mut sat = 0.0;
            for v in 0..vocab.len() as TokenId {
                let brute = brute_sat(&hmm, &c, &u, v, budget);
                let got = allowed.get(&v).copied().unwrap_or(0.0);
                assert!(
                    (got - brute).abs() <= 1e-12 * brute.max(1e-300).max(1.0),
                    "u {u:?} v {v} budget {budget}: guide {got} vs brute force {brute}"
                );
                assert_eq!(allowed.contains_key(&v), brute > 0.0, "u {u:?} v {v}");
                let mut uv = u.clone();
                uv.push(v);
                sat += (hmm.log_likelihood(&uv) - hmm.log_likelihood(&u)).exp() * brute;
                checked += 1;
            }
            let g = guide.satisfiable(&belief, s, budget);
            assert!(
                (g - sat).abs() < 1e-12,
                "u {u:?} budget {budget}: {g} vs {sat}"
            );
        }
    }
    assert!(checked >= 100, "{checked}");
}

/// E[Ĝ] and E[Ĝ · Σ_m w̄_m 1{x_m = w}] of one run of `p-gcd-smc`, by enumerating every
/// random path of the run.
fn exact_expectations<L: LanguageModel, C: Constraint>(
    lm: &mut L,
    c: &C,
    guide: &Guide,
    p: &Params,
) -> (f64, Dist, usize) {
    let paths = enumerate_paths(500_000, |rng: &mut dyn RandomSource| {
        with_quiet_ctx(lm, c, rng, p, |ctx| {
            block_on(smc::run_once(ctx, TokenProposal::PGcd(guide), 0)).unwrap()
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
    (mean_g, weighted, paths.len())
}

fn max_diff(a: &Dist, b: &Dist) -> f64 {
    a.keys()
        .chain(b.keys())
        .map(|k| (a.get(k).unwrap_or(&0.0) - b.get(k).unwrap_or(&0.0)).abs())
        .fold(0.0, f64::max)
}

/// Exactly, by enumerating every random path of a 2-particle run that resamples at every
/// step, with a budget of 3 tokens (two of the eight tokenizations do not fit): E[Ĝ] =
/// P(L within the budget) and the ensemble is properly weighted for P^L within the budget,
/// to 1e-12, for a random HMM and for an HMM distilled from the model (the target does
/// not depend on the HMM). The mutant that weighs by the mask mass instead of dividing by
/// the guide factor (what smc-gcd's weight would be) misses E[Ĝ] = Z.
#[test]
fn p_gcd_smc_is_properly_weighted_and_the_mutant_is_not() {
    let c = small_language();
    let mut lm = RandomLm::new(4, 3, 2, 4);
    let (target, z) = exact_mass(&mut lm, &c, 3);
    assert_eq!(target.len(), 6);
    let p = Params {
        particles: 2,
        max_tokens: 3,
        ess_threshold: 1.0,
        ..Params::default()
    };
    let random = Hmm::random(3, 4, &mut SeededRng::new(2));
    let distilled = with_quiet_ctx(&mut lm, &c, &mut SeededRng::new(3), &p, |ctx| {
        let cfg = HmmConfig {
            hidden_states: 3,
            sequences: 64,
            ..HmmConfig::default()
        };
        block_on(crate::samplers::pgcd::distill(ctx, &cfg)).unwrap()
    });
    for (name, hmm) in [("random", random.clone()), ("distilled", distilled)] {
        let mut guide = Guide::new(hmm, c.tensorized().unwrap(), 3, 1e-6).unwrap();
        let (mean_g, weighted, paths) = exact_expectations(&mut lm, &c, &guide, &p);
        let d = max_diff(&weighted, &target);
        eprintln!(
            "p-gcd ({name} HMM): {paths} paths, E[Ĝ] = {mean_g:.12} vs Z = {z:.12}, max \
             weighted diff {d:.1e}"
        );
        assert!((mean_g - z).abs() < 1e-12);
        assert!(d < 1e-12);
        guide.mutant = true;
        let (mutant_g, weighted, _) = exact_expectations(&mut lm, &c, &guide, &p);
        let d = max_diff(&weighted, &target);
        eprintln!("mutant ({name} HMM): E[Ĝ] = {mutant_g:.6}, max weighted diff {d:.1e}");
        assert!((mutant_g - z).abs() > 1e-3, "{mutant_g} vs {z}");
    }
}

/// Runs `p-gcd-smc` (or its mutant) `runs` times with `m` particles and returns each
/// run's Ĝ and its weighted particles.
fn smc_runs<L: LanguageModel, C: Constraint>(
    lm: &mut L,
    c: &C,
    guide: &Guide,
    p: &Params,
    seed: u64,
) -> Vec<smc::SmcResult> {
    let mut rng = SeededRng::new(seed);
    (0..p.n)
        .map(|r| {
            with_quiet_ctx(lm, c, &mut rng, p, |ctx| {
                block_on(smc::run_once(ctx, TokenProposal::PGcd(guide), r)).unwrap()
            })
        })
        .collect()
}

fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Through `run`: distillation notes come first, then `--n` SMC runs; over 2000 runs of
/// 4 particles the mean Ĝ is within 3 standard errors of the exact Z, and the same test
/// rejects the mutant (weighted by the mask mass).
#[test]
fn p_gcd_smc_evidence_is_unbiased_and_the_mutant_is_caught() {
    let c = small_language();
    let mut lm = RandomLm::new(4, 3, 2, 4);
    let (_, z) = exact_mass(&mut lm, &c, 3);
    let p = Params {
        n: 2000,
        particles: 4,
        max_tokens: 3,
        hmm: HmmConfig {
            hidden_states: 4,
            sequences: 32,
            ..HmmConfig::default()
        },
        ..Params::default()
    };
    let (mut sink, mut samples) = (VecSink::default(), Vec::new());
    let counters = block_on(Sampler::new(Method::PGcdSmc).params(&p).run(
        &mut lm,
        &c,
        Io {
            rng: &mut SeededRng::new(5),
            sink: &mut sink,
            out: &mut |s| samples.push(s.clone()),
        },
    ))
    .unwrap();
    assert_eq!(samples.len(), 8000);
    assert!(samples.iter().all(|s| s.valid && s.tokens.len() <= 3));
    assert_eq!(counters.generations, 32 + 2000 * 4, "distillation counted");
    let notes: Vec<&str> = sink
        .0
        .iter()
        .filter_map(|e| match e {
            Event::Note { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        notes[0].starts_with("p-gcd: sampling 32 sequences"),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.starts_with("p-gcd: guide built")));
    let ev: Vec<f64> = sink
        .0
        .iter()
        .filter_map(|e| match e {
            Event::Evidence { log_evidence, .. } => Some(log_evidence.exp()),
            _ => None,
        })
        .collect();
    // Every extension reports the guide: its Token event carries the budget mask's mass Z,
    // and the GuideStep after it the same Z, the guide's share of it, q over the top
    // tokens, and the weight P(v)/q(v) of the token drawn.
    let mut guided = 0;
    for pair in sink.0.windows(2) {
        let (
            Event::Token {
                particle,
                position,
                token,
                kept_mass,
                ..
            },
            Event::GuideStep {
                particle: gp,
                position: gpos,
                token: gt,
                mask_mass,
                guide_mass,
                weight,
                top,
            },
        ) = (&pair[0], &pair[1])
        else {
            continue;
        };
        guided += 1;
        assert_eq!((particle, position, token), (gp, gpos, gt));
        assert_eq!(*kept_mass, Some(*mask_mass));
        assert!(*mask_mass > 0.0 && *mask_mass <= 1.0 + 1e-9);
        assert!(*guide_mass > 0.0 && *guide_mass <= 1.0 + 1e-9);
        let q_sum: f64 = top.iter().map(|t| t.2).sum();
        assert!(q_sum <= 1.0 + 1e-9 && !top.is_empty());
        if let Some(&(_, p_v, q_v)) = top.iter().find(|t| t.0 == *token) {
            assert!(
                (weight - p_v / q_v).abs() <= 1e-9 * weight.max(1.0),
                "weight {weight} vs P/q {}",
                p_v / q_v
            );
        }
    }
    let tokens = sink
        .0
        .iter()
        .filter(|e| matches!(e, Event::Token { .. }))
        .count();
    assert!(
        guided > 0
            && guided
                == sink
                    .0
                    .iter()
                    .filter(|e| matches!(e, Event::GuideStep { .. }))
                    .count()
    );
    assert!(guided <= tokens);
    let (mean, se) = mean_se(&ev);
    eprintln!("p-gcd-smc: mean Ĝ = {mean:.5} ± {se:.5} (exact Z = {z:.5})");
    assert!((mean - z).abs() < 3.0 * se);

    let hmm = Hmm::random(3, 4, &mut SeededRng::new(2));
    let mut guide = Guide::new(hmm, c.tensorized().unwrap(), 3, 1e-6).unwrap();
    guide.mutant = true;
    let ev: Vec<f64> = smc_runs(&mut lm, &c, &guide, &p, 6)
        .iter()
        .map(|r| r.log_evidence.exp())
        .collect();
    let (mean, se) = mean_se(&ev);
    eprintln!("mutant: mean Ĝ = {mean:.5} ± {se:.5} (exact Z = {z:.5})");
    assert!((mean - z).abs() > 3.0 * se);
}

/// TV between a distribution and the target.
fn tv(a: &Dist, b: &Dist) -> f64 {
    let keys: std::collections::BTreeSet<_> = a.keys().chain(b.keys()).collect();
    0.5 * keys
        .into_iter()
        .map(|k| (a.get(k).unwrap_or(&0.0) - b.get(k).unwrap_or(&0.0)).abs())
        .sum::<f64>()
}

/// The pooled weighted ensemble of `runs` (each run's normalized weights), normalized.
fn pooled(runs: &[smc::SmcResult]) -> Dist {
    let mut d = Dist::new();
    for r in runs {
        for (x, w) in r.tokens.iter().zip(&r.weights) {
            *d.entry(x.clone()).or_insert(0.0) += w;
        }
    }
    d.retain(|_, w| *w > 0.0);
    let total: f64 = d.values().sum();
    d.values_mut().for_each(|w| *w /= total);
    d
}

/// The weighted ensemble approaches P^L as particles grow. With a random 2-state HMM the
/// proposal alone (M = 1) is off by TV ≈ 0.15 (exactly, by path enumeration); the pooled
/// ensemble of 2000 runs falls from there at M = 1 to 4 to 16, ending below a quarter
/// of it. On G_sk (as a regex, seed 004) with a weakly distilled HMM the evidence is
/// unbiased at every M.
#[test]
fn p_gcd_smc_ensemble_approaches_the_target_as_particles_grow() {
    let c = small_language();
    let mut lm = RandomLm::new(4, 3, 2, 4);
    let (target, z) = exact_mass(&mut lm, &c, 8);
    let target: Dist = target.into_iter().map(|(k, v)| (k, v / z)).collect();
    let hmm = Hmm::random(2, 4, &mut SeededRng::new(2));
    let guide = Guide::new(hmm, c.tensorized().unwrap(), 8, 1e-6).unwrap();
    let one = Params {
        particles: 1,
        max_tokens: 8,
        ..Params::default()
    };
    let paths = enumerate_paths(100_000, |rng: &mut dyn RandomSource| {
        with_quiet_ctx(&mut lm, &c, rng, &one, |ctx| {
            block_on(smc::run_once(ctx, TokenProposal::PGcd(&guide), 0)).unwrap()
        })
    })
    .unwrap();
    let mut proposal = Dist::new();
    for (prob, r) in &paths {
        *proposal.entry(r.tokens[0].clone()).or_insert(0.0) += prob;
    }
    let exact_tv1 = tv(&proposal, &target);
    let mut tvs = Vec::new();
    for m in [1, 4, 16] {
        let p = Params {
            n: 2000,
            particles: m,
            ..one.clone()
        };
        tvs.push(tv(&pooled(&smc_runs(&mut lm, &c, &guide, &p, 9)), &target));
    }
    eprintln!(
        "p-gcd-smc, random HMM: exact TV of the proposal {exact_tv1:.4}; pooled TV at M = 1, \
         4, 16: {tvs:.4?}"
    );
    assert!(exact_tv1 > 0.1, "{exact_tv1}");
    assert!(tvs[0] > tvs[1] && tvs[1] > tvs[2], "{tvs:?}");
    assert!(tvs[2] < exact_tv1 / 4.0, "{tvs:?}");

    let vocab = gsk_vocabulary();
    let c = RegexConstraint::from_regex("00000|1[01]{4}", &vocab).unwrap();
    let mut lm = gsk_lm();
    let (target, z) = exact_mass(&mut lm, &c, 8);
    let target: Dist = target.into_iter().map(|(k, v)| (k, v / z)).collect();
    let hmm = with_quiet_ctx(&mut lm, &c, &mut SeededRng::new(1), &one, |ctx| {
        let cfg = HmmConfig {
            hidden_states: 2,
            sequences: 8,
            ..HmmConfig::default()
        };
        block_on(crate::samplers::pgcd::distill(ctx, &cfg)).unwrap()
    });
    let guide = Guide::new(hmm, c.tensorized().unwrap(), 8, 1e-6).unwrap();
    for m in [1, 4, 16] {
        let p = Params {
            n: 2000,
            particles: m,
            ..one.clone()
        };
        let runs = smc_runs(&mut lm, &c, &guide, &p, 9);
        let ev: Vec<f64> = runs.iter().map(|r| r.log_evidence.exp()).collect();
        let (mean, se) = mean_se(&ev);
        eprintln!(
            "p-gcd-smc on G_sk, M = {m}: TV {:.4}, mean Ĝ = {mean:.5} ± {se:.5} (Z = {z:.5})",
            tv(&pooled(&runs), &target)
        );
        assert!((mean - z).abs() < 3.0 * se, "M = {m}");
    }
}

/// The same seed gives the same run, distillation included; another seed another run.
#[test]
fn p_gcd_smc_is_deterministic_given_the_seed() {
    let c = small_language();
    let draw = |seed| {
        let mut lm = RandomLm::new(4, 3, 2, 4);
        let p = Params {
            n: 3,
            particles: 4,
            max_tokens: 4,
            ..Params::default()
        };
        let mut out = Vec::new();
        block_on(Sampler::new(Method::PGcdSmc).params(&p).run(
            &mut lm,
            &c,
            Io {
                rng: &mut SeededRng::new(seed),
                sink: &mut NullSink,
                out: &mut |s| out.push((s.tokens.clone(), s.weight)),
            },
        ))
        .unwrap();
        out
    };
    assert_eq!(draw(8), draw(8));
    assert_ne!(draw(8), draw(9));
}

/// An HMM or a guide table too large is refused before any model call, with the flag to
/// lower; not by an allocation failure, nor after a long distillation.
#[test]
fn oversized_hmms_and_guides_are_refused_before_distilling() {
    let c = small_language();
    let mut lm = RandomLm::new(4, 3, 2, 4);
    // 4 tokens: 2^26 hidden states need (h·4 + h² + h)·8 bytes, far over the limit.
    let cfg = HmmConfig {
        hidden_states: 1 << 26,
        ..HmmConfig::default()
    };
    let p = Params::default();
    let e = with_quiet_ctx(&mut lm, &c, &mut SeededRng::new(0), &p, |ctx| {
        let e = block_on(crate::samplers::pgcd::distill(ctx, &cfg)).unwrap_err();
        assert_eq!(ctx.counters().lm_calls, 0);
        e
    });
    assert!(e.to_string().contains("lower --hmm-states"), "{e}");
    // Through `run`: the guide's table (max tokens × automaton states × hidden states) is
    // checked first, before the distillation's model calls.
    let p = Params {
        max_tokens: 1 << 20,
        hmm: HmmConfig {
            hidden_states: 64,
            ..HmmConfig::default()
        },
        ..Params::default()
    };
    let mut sink = VecSink::default();
    let e = block_on(Sampler::new(Method::PGcdSmc).params(&p).run(
        &mut lm,
        &c,
        Io {
            rng: &mut SeededRng::new(0),
            sink: &mut sink,
            out: &mut |_| {},
        },
    ))
    .unwrap_err();
    assert!(e.to_string().contains("P-GCD table"), "{e}");
    assert!(sink.0.is_empty(), "no distillation began: {:?}", sink.0);
}
