//! `auto`: the faithful sampler that will finish, chosen by watching the exact one.
//!
//! Exact rejection with CARS needs few generations a sample when the model mostly writes
//! valid text, or when CARS's trie soon learns where the invalid continuations are; it
//! cannot finish when valid outputs hold 10^-16 of the model's mass and the trie cannot
//! close in on them. Weighted SMC finishes in about one batched generation a run whatever
//! the mass, but its samples carry weights. `auto` starts CARS and watches its running
//! cost, generations / (accepted + 1): once it passes [`EXACT_MAX_GENERATIONS`] after at
//! least [`MIN_GENERATIONS`] generations, the exact samples drawn so far stand and
//! weighted SMC ([`WEIGHTED`]) draws the rest, one run per missing sample. Either way it
//! says which and why in an [`Event::Estimate`]: when the rule first applies, and, after
//! a handover, with the first SMC run's estimate of the mass of valid outputs.
//!
//! The rule reads counts only, never what was drawn, and a CARS sample is P^L however long
//! it took to draw (every generation's accepted output follows P^L, whatever the trie), so
//! stopping CARS selects no sample: the samples handed out are exact, the runs after the
//! handover properly weighted. `auto_is_exact_or_properly_weighted_given_its_choice_by_
//! path_enumeration` (tests/integration/mcmc_smc.rs) checks both to 1e-12, and catches a
//! rule that looks at the samples.

use super::rejection::{Strategy, rejection_sample_watched};
use super::trie::Trie;
use super::watch::{Progress, Verdict, count_text, mass_text};
use super::{Ctx, Method, smc};
use crate::{Constraint, Event, LanguageModel, SampleError};

pub use super::watch::WEIGHTED;

/// Generations CARS runs before the rule applies (so that one unlucky start does not end
/// it).
pub const MIN_GENERATIONS: u64 = 10;

/// CARS goes on while its running cost, generations / (accepted + 1), stays at most this;
/// past it, weighted SMC. On the CPU an SMC run of 8 particles costs about 3.5 masked
/// samples and a CARS generation 0.2 to 0.5 of one (rejected generations stop at their
/// first invalid token and share their prefix's cache), so up to about 8 generations a
/// sample the exact sampler costs no more (`strait bench faithful`, docs/bench/faithful.md).
pub const EXACT_MAX_GENERATIONS: f64 = 8.0;

/// When `auto` hands over from CARS to weighted SMC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    /// Generations before the rule applies.
    pub min_generations: u64,
    /// Hand over once generations / (accepted + 1) exceeds it.
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

impl Rule {
    /// The verdict after a generation: hand over when the running cost is past the bound,
    /// say once that CARS goes on when the rule first applies and it does not.
    pub fn check(&self, p: &Progress) -> Verdict {
        if p.generations < self.min_generations {
            return Verdict::Go;
        }
        let cost = p.generations as f64 / (p.accepted + 1) as f64;
        let seen = format!(
            "{} of the first {} generations were valid",
            p.accepted, p.generations
        );
        if cost > self.max_generations {
            return Verdict::HandOver(Event::Estimate {
                log_mass: p.p_root.ln(),
                method: WEIGHTED.name().into(),
                chosen: true,
                message: format!(
                    "auto: {seen}: exact sampling would need about {} or more generations a \
                     sample, so weighted SMC ({}) draws the rest",
                    count_text(cost),
                    WEIGHTED.name()
                ),
            });
        }
        if p.generations == self.min_generations {
            return Verdict::Say(Event::Estimate {
                log_mass: (p.accepted as f64 / p.generations as f64).ln(),
                method: Method::Cars.name().into(),
                chosen: true,
                message: format!(
                    "auto: {seen}: about {cost:.1} generations a sample, so exact sampling \
                     (cars) goes on"
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
    let exact =
        rejection_sample_watched(ctx, Strategy::Cars, &mut trie, None, &mut |p| rule.check(p))
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
    let proposal = if ctx.is_regular() {
        smc::TokenProposal::BudgetMask
    } else {
        smc::TokenProposal::Mask
    };
    for run in 0..n.saturating_sub(exact) {
        let r = smc::run_once(ctx, proposal, run).await?;
        if run == 0 {
            ctx.emit(first_run_estimate(r.log_evidence));
        }
    }
    Ok(())
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

    fn at(accepted: usize, generations: u64) -> Progress {
        Progress {
            accepted,
            generations,
            failures: 0,
            p_root: 0.25,
        }
    }

    #[test]
    fn the_rule_hands_over_when_exact_sampling_costs_too_many_generations() {
        let r = Rule::default();
        assert_eq!(r.check(&at(0, MIN_GENERATIONS - 1)), Verdict::Go);
        // 10 generations, 4 valid: 2 a sample, CARS goes on, and says so once.
        let Verdict::Say(Event::Estimate {
            method, message, ..
        }) = r.check(&at(4, 10))
        else {
            panic!("no word when the rule first applies");
        };
        assert_eq!(method, "cars");
        assert!(
            message.contains("4 of the first 10 generations were valid")
                && message.contains("about 2.0 generations a sample"),
            "{message}"
        );
        assert_eq!(r.check(&at(4, 11)), Verdict::Go);
        // 10 generations, none valid: 10 a sample, weighted SMC.
        let Verdict::HandOver(Event::Estimate {
            method,
            chosen,
            message,
            ..
        }) = r.check(&at(0, 10))
        else {
            panic!("no handover");
        };
        assert!(chosen && method == "smc-gcd");
        assert!(message.contains("about 10 or more generations"), "{message}");
        // Later: 30 generations, 2 valid = 10 a sample; 4 valid = 6.
        assert!(matches!(r.check(&at(2, 30)), Verdict::HandOver(_)));
        assert_eq!(r.check(&at(4, 30)), Verdict::Go);
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

    fn run_auto(lm: &mut impl LanguageModel, c: &impl Constraint, n: usize) -> (VecSink, Vec<crate::samplers::Sample>) {
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
    /// CARS's trie learns slowly: auto hands over after its first 10 generations, none
    /// valid. n SMC runs follow (nothing exact was drawn), and the handover and the first
    /// run's estimate are said.
    #[test]
    fn auto_on_a_rare_language_hands_over_to_weighted_smc() {
        use crate::toy::FnLm;
        let vocab =
            crate::Vocabulary::new(vec![b"a".to_vec(), b"b".to_vec(), Vec::new()], 2, &[2]);
        let c = crate::RegexConstraint::from_regex("[ab]{12}", &vocab).unwrap();
        let mut lm = FnLm::new(3, 2, |_: &[crate::TokenId]| vec![0.3, 0.3, 0.4]);
        let (sink, samples) = run_auto(&mut lm, &c, 3);
        let runs: std::collections::BTreeSet<_> = samples.iter().filter_map(|s| s.run).collect();
        assert_eq!(runs.len(), 3, "{samples:?}");
        assert!(samples.iter().all(|s| s.weight.is_some()));
        let e = estimates(&sink);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].0 == "smc-gcd" && e[0].1.contains("0 of the first 10"), "{e:?}");
        // The budget mask's weights give P(valid) exactly.
        assert!(e[1].1.contains("about 9e-4 of the model's mass"), "{e:?}");
    }
}
