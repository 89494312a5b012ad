//! `auto`: the faithful sampler that will finish, chosen by watching the exact one.
//!
//! Exact rejection with CARS needs few generations a sample when the model mostly writes
//! valid text, or when CARS's trie soon learns where the invalid continuations are; it
//! cannot finish when valid outputs hold 10^-16 of the model's mass and the trie cannot
//! close in on them. Weighted SMC finishes in about one batched generation a run whatever
//! the mass, but its samples carry weights. `auto` starts CARS and estimates, as its trie
//! learns, how many generations a sample it needs from here ([`Meter`]): once that passes
//! [`EXACT_MAX_GENERATIONS`] after at least [`MIN_GENERATIONS`] generations, the exact
//! samples drawn so far stand and weighted SMC ([`WEIGHTED`]) draws the rest, one run per
//! missing sample. Either way it
//! says which and why in an [`Event::Estimate`]: when the rule first applies, and, after
//! a handover, with the first SMC run's estimate of the mass of valid outputs. A weighted
//! run whose every particle dies (token masking led them all past the token limit, as on
//! SyGuS terms that nest without end) sends it back to CARS for the samples left: exact,
//! and it ends.
//!
//! The rule reads counts only, never what was drawn, and a CARS sample is P^L however long
//! it took to draw (every generation's accepted output follows P^L, whatever the trie), so
//! stopping CARS selects no sample: the samples handed out are exact, the runs after the
//! handover properly weighted. `auto_is_exact_or_properly_weighted_given_its_choice_by_
//! path_enumeration` (tests/integration/mcmc_smc.rs) checks both to 1e-12, and catches a
//! rule that looks at the samples.

use super::rejection::{Strategy, rejection_sample_watched};
use super::trie::Trie;
use super::watch::{Advice, Progress, Verdict, count_text, mass_text};
use super::{Ctx, Method, smc};
use crate::{Constraint, Event, LanguageModel, SampleError};

pub use super::watch::WEIGHTED;

/// Generations CARS runs before the rule applies: its trie learns, so its first
/// generations fail most (on G_sk with SmolLM2 the first 10 held no valid sample and the
/// next 23 held 10), and a rule applied sooner hands over where CARS would finish soonest.
pub const MIN_GENERATIONS: u64 = 20;

/// CARS goes on while the generations a sample it needs from here ([`Meter`]) stay at most
/// this; past it, weighted SMC. On the CPU an SMC run of 8 particles costs about 3.5 masked
/// samples and a CARS generation 0.2 to 0.5 of one (rejected generations stop at their
/// first invalid token and share their prefix's cache), so up to about 8 generations a
/// sample the exact sampler costs no more (`strait bench faithful`, docs/bench/faithful.md).
pub const EXACT_MAX_GENERATIONS: f64 = 8.0;

/// When `auto` hands over from CARS to weighted SMC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    /// Generations before the rule applies.
    pub min_generations: u64,
    /// Hand over once the estimated generations a sample exceed it.
    pub max_generations: f64,
    /// Test-only mutant: hands over to token masking (`lcd`, biased, but fast) instead of
    /// weighted SMC (the tests must catch it).
    #[cfg(any(test, feature = "mutants"))]
    pub mask_instead: bool,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            min_generations: MIN_GENERATIONS,
            max_generations: EXACT_MAX_GENERATIONS,
            #[cfg(any(test, feature = "mutants"))]
            mask_instead: false,
        }
    }
}

/// The [`Rule`] applied along one run. It estimates the mass Z of valid outputs while
/// CARS learns: generation i is accepted with probability Z/p_i, p_i the trie's live mass
/// when it started, so Ẑ = Σ_i 1[i accepted]·p_i / G is unbiased for Z, and the
/// generations a sample from now on are about p/Ẑ, p the live mass now. Where the trie has
/// learned (p small) that is far below generations / accepted, which counts the early
/// failures the trie has since ruled out. With `--batch` B > 1 a batch's generations all
/// start from the batch's trie while the meter sees it pruned generation by generation, so
/// Ẑ comes out low and the handover early: only the choice moves, never a sample.
#[derive(Clone, Debug)]
pub struct Meter {
    rule: Rule,
    /// The trie's live mass before the next generation.
    p_before: f64,
    /// Σ_i 1[i accepted]·p_i.
    accepted_mass: f64,
    /// Acceptances seen so far.
    accepted: usize,
}

impl Meter {
    /// A meter for a run from an empty trie (live mass 1).
    pub fn new(rule: Rule) -> Self {
        Meter {
            rule,
            p_before: 1.0,
            accepted_mass: 0.0,
            accepted: 0,
        }
    }

    /// The verdict after a generation: hand over when the estimated generations a sample
    /// are past the bound, say once that CARS goes on when the rule first applies.
    pub fn check(&mut self, p: &Progress) -> Verdict {
        if p.accepted > self.accepted {
            self.accepted_mass += (p.accepted - self.accepted) as f64 * self.p_before;
            self.accepted = p.accepted;
        }
        self.p_before = p.p_root;
        if p.generations < self.rule.min_generations {
            return Verdict::Go;
        }
        let z = self.accepted_mass / p.generations as f64;
        let cost = if z > 0.0 {
            (p.p_root / z).max(1.0)
        } else {
            f64::INFINITY
        };
        let seen = format!(
            "{} of the first {} generations were valid",
            p.accepted, p.generations
        );
        if cost > self.rule.max_generations {
            let estimate = if z > 0.0 {
                format!("about {} generations a sample from here", count_text(cost))
            } else {
                format!(
                    "valid outputs hold at most {} of the model's mass (what CARS's trie has \
                     not ruled out)",
                    mass_text(p.p_root)
                )
            };
            return Verdict::HandOver(Event::Estimate {
                log_mass: if z > 0.0 { z.ln() } else { p.p_root.ln() },
                method: WEIGHTED.name().into(),
                chosen: true,
                message: format!(
                    "auto: {seen}, {estimate}: exact sampling would take too long, so \
                     weighted SMC ({}) draws the rest",
                    WEIGHTED.name()
                ),
            });
        }
        if p.generations == self.rule.min_generations {
            return Verdict::Say(Event::Estimate {
                log_mass: z.ln(),
                method: Method::Cars.name().into(),
                chosen: true,
                message: format!(
                    "auto: {seen}; valid outputs hold about {} of the model's mass and CARS \
                     needs about {cost:.1} generations a sample from here, so exact sampling \
                     (cars) goes on",
                    mass_text(z)
                ),
            });
        }
        Verdict::Go
    }
}

/// CARS watched by the default [`Rule`], then weighted SMC for what it left.
pub async fn run<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
) -> Result<(), SampleError> {
    run_with(ctx, Rule::default()).await
}

/// [`run`] with `rule`.
pub async fn run_with<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
    rule: Rule,
) -> Result<(), SampleError> {
    let mut trie = Trie::new(ctx.vocab_size());
    let n = ctx.params().n;
    let mut meter = Meter::new(rule);
    let exact = rejection_sample_watched(ctx, Strategy::Cars, &mut trie, None, n, &mut |p| {
        meter.check(p)
    })
    .await?;
    #[cfg(any(test, feature = "mutants"))]
    if rule.mask_instead {
        for _ in exact..n {
            let init = Some(ctx.initial());
            let g = super::generate(ctx, &[], init, super::Masking::Viable, 0).await?;
            ctx.finish(g.tokens, g.logp, g.valid, None, None)?;
        }
        return Ok(());
    }
    let proposal = smc::TokenProposal::masking(ctx.is_regular());
    for run in 0..n.saturating_sub(exact) {
        let r = smc::run_once(ctx, proposal, run).await?;
        if run == 0 {
            ctx.emit(first_run_estimate(r.log_evidence));
        }
        if r.log_evidence == f64::NEG_INFINITY {
            // Every particle died: masking leads this model past the token limit, and more
            // runs would die the same way. Exact CARS finishes the samples left (the dead
            // run's among them), its trie as it was left: slow, but it ends.
            let left = n - exact - run;
            ctx.emit(back_to_exact(run, left));
            let mut advice = Advice::default();
            rejection_sample_watched(ctx, Strategy::Cars, &mut trie, None, left, &mut |p| {
                advice.check(p)
            })
            .await?;
            return Ok(());
        }
    }
    Ok(())
}

/// Why `auto` went back to exact CARS after weighted run `run` died whole.
fn back_to_exact(run: usize, left: usize) -> Event {
    Event::Estimate {
        log_mass: f64::NEG_INFINITY,
        method: Method::Cars.name().into(),
        chosen: true,
        message: format!(
            "auto: every particle of weighted run {} died before the token limit (token \
             masking leads this model into outputs too long to finish): exact sampling (cars) \
             draws the {left} sample{} left instead, slower but sure to end",
            run + 1,
            if left == 1 { "" } else { "s" }
        ),
    }
}

/// What the first weighted run says of the mass of valid outputs (its evidence Ĝ).
fn first_run_estimate(log_mass: f64) -> Event {
    let message = if log_mass == f64::NEG_INFINITY || log_mass.is_nan() {
        "auto: every particle of the first weighted run died: valid outputs hold too little \
         of the model's mass to measure"
            .to_string()
    } else {
        let mass = log_mass.exp().min(1.0);
        format!(
            "auto: the first weighted run puts valid outputs at about {} of the model's mass: \
             plain rejection would need about {} generations a sample",
            mass_text(mass),
            count_text(1.0 / mass)
        )
    };
    Event::Estimate {
        log_mass,
        method: WEIGHTED.name().into(),
        chosen: true,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samplers::{Io, Params, Sampler};
    use crate::toy::{gsk_constraint, gsk_lm};
    use crate::{SeededRng, VecSink, block_on};

    /// Feeds a meter `generations` generations: accepted at the listed ones, the trie's
    /// live mass after generation g being `p(g)`; returns each verdict.
    fn feed(accepts: &[u64], generations: u64, p: impl Fn(u64) -> f64) -> Vec<Verdict> {
        let mut m = Meter::new(Rule::default());
        let mut accepted = 0;
        (1..=generations)
            .map(|g| {
                accepted += usize::from(accepts.contains(&g));
                m.check(&Progress {
                    accepted,
                    generations: g,
                    failures: 0,
                    p_root: p(g),
                })
            })
            .collect()
    }

    fn message(v: &Verdict) -> (&str, &str) {
        match v {
            Verdict::Say(Event::Estimate {
                method, message, ..
            })
            | Verdict::HandOver(Event::Estimate {
                method, message, ..
            }) => (method, message),
            other => panic!("no estimate: {other:?}"),
        }
    }

    /// No valid sample in the first 20 generations: weighted SMC, saying how much of the
    /// mass the trie has left.
    #[test]
    fn the_meter_hands_over_when_nothing_valid_came() {
        let v = feed(&[], MIN_GENERATIONS, |_| 0.25);
        assert!(v[..v.len() - 1].iter().all(|v| *v == Verdict::Go));
        let last = v.last().unwrap();
        assert!(matches!(last, Verdict::HandOver(_)), "{last:?}");
        let (method, text) = message(last);
        assert_eq!(method, "smc-gcd");
        assert!(
            text.contains("0 of the first 20 generations were valid")
                && text.contains("at most 0.25 of the model's mass"),
            "{text}"
        );
    }

    /// One valid sample in 20 generations, drawn while the trie still held half the mass,
    /// which it has since cut to a tenth: Ẑ = 0.5/20, and from here CARS needs about
    /// 0.1/Ẑ = 4 generations a sample (generations / accepted would say 20), so it goes on.
    #[test]
    fn the_meter_counts_what_the_trie_has_learned() {
        let v = feed(&[5], MIN_GENERATIONS, |g| if g < 5 { 0.5 } else { 0.1 });
        let (method, text) = message(v.last().unwrap());
        assert!(matches!(v.last().unwrap(), Verdict::Say(_)));
        assert_eq!(method, "cars");
        assert!(
            text.contains("1 of the first 20 generations were valid")
                && text.contains("about 0.03 of the model's mass")
                && text.contains("about 4.0 generations a sample from here"),
            "{text}"
        );
        // The same valid sample with the trie learning nothing: 20 a sample, handed over.
        let v = feed(&[5], MIN_GENERATIONS, |_| 0.5);
        let (_, text) = message(v.last().unwrap());
        assert!(matches!(v.last().unwrap(), Verdict::HandOver(_)), "{text}");
        assert!(
            text.contains("about 20 generations a sample from here"),
            "{text}"
        );
        // Later generations are judged too, and said nothing of while CARS is cheap.
        let v = feed(&(1..=30).collect::<Vec<_>>(), 30, |_| 0.5);
        assert!(
            v[MIN_GENERATIONS as usize..]
                .iter()
                .all(|v| *v == Verdict::Go)
        );
    }

    #[test]
    fn the_first_weighted_run_names_the_mass() {
        let Event::Estimate { message, .. } = first_run_estimate(1e-19f64.ln()) else {
            panic!()
        };
        assert!(
            message.contains("about 1e-19 of the model's mass")
                && message.contains("about 1e19 generations"),
            "{message}"
        );
        let Event::Estimate { message, .. } = first_run_estimate(f64::NEG_INFINITY) else {
            panic!()
        };
        assert!(message.contains("every particle"), "{message}");
    }

    fn run_auto(
        lm: &mut impl LanguageModel,
        c: &impl Constraint,
        n: usize,
    ) -> (VecSink, Vec<crate::samplers::Sample>) {
        let p = Params {
            n,
            max_tokens: 16,
            ..Params::default()
        };
        let (mut sink, mut samples) = (VecSink::default(), Vec::new());
        block_on(Sampler::new(Method::Auto).params(&p).run(
            lm,
            c,
            Io {
                rng: &mut SeededRng::new(2),
                sink: &mut sink,
                out: &mut |s| samples.push(s.clone()),
            },
        ))
        .unwrap();
        (sink, samples)
    }

    fn estimates(sink: &VecSink) -> Vec<(String, String)> {
        sink.0
            .iter()
            .filter_map(|e| match e {
                Event::Estimate {
                    method, message, ..
                } => Some((method.clone(), message.clone())),
                _ => None,
            })
            .collect()
    }

    /// On G_sk (valid outputs hold about 0.55 of the mass) auto stays with CARS: n
    /// unweighted samples, one word that it goes on, no SMC.
    #[test]
    fn auto_on_gsk_stays_exact() {
        let (sink, samples) = run_auto(&mut gsk_lm(), &gsk_constraint(), 20);
        assert_eq!(samples.len(), 20);
        assert!(samples.iter().all(|s| s.valid && s.weight.is_none()));
        let e = estimates(&sink);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].0 == "cars" && e[0].1.contains("goes on"), "{e:?}");
        assert!(!sink.0.iter().any(|e| matches!(e, Event::Evidence { .. })));
    }

    /// On `[ab]{12}` under a model that ends a string with probability 0.4 at every step,
    /// valid outputs hold 0.6^12·0.4 ≈ 9e-4 of the mass, spread over 4096 strings, so
    /// CARS's trie learns slowly: auto hands over after its first 20 generations. The
    /// exact samples drawn so far stand, weighted runs draw the rest, and the handover and
    /// the first run's estimate are said.
    #[test]
    fn auto_on_a_rare_language_hands_over_to_weighted_smc() {
        use crate::toy::FnLm;
        let vocab = crate::Vocabulary::new(vec![b"a".to_vec(), b"b".to_vec(), Vec::new()], 2, &[2]);
        let c = crate::RegexConstraint::from_regex("[ab]{12}", &vocab).unwrap();
        let mut lm = FnLm::new(3, 2, |_: &[crate::TokenId]| vec![0.3, 0.3, 0.4]);
        let (sink, samples) = run_auto(&mut lm, &c, 3);
        // n samples in all: the exact ones CARS drew before the handover, then one
        // weighted run each.
        let exact = samples.iter().filter(|s| s.weight.is_none()).count();
        let runs: std::collections::BTreeSet<_> = samples.iter().filter_map(|s| s.run).collect();
        assert!(exact < 3 && !runs.is_empty(), "{samples:?}");
        assert_eq!(exact + runs.len(), 3, "{samples:?}");
        let e = estimates(&sink);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[0].0 == "smc-gcd" && e[0].1.contains("of the first 20"),
            "{e:?}"
        );
        // The budget mask's weights give P(valid) exactly.
        assert!(e[1].1.contains("about 9e-4 of the model's mass"), "{e:?}");
    }
}
