//! How SMC runs should be combined: on the toy-random example, the TV distance to the
//! exact P^L of each run's normalized ensemble averaged over runs, and of the runs weighted
//! by their evidence Ĝ, for several M and τ (with lcd and cars for scale).
//!
//! `cargo run --release -p playground --example smc_combine`
use playground::constraint::build_constraint;
use playground::detect::GrammarKind;
use playground::exact::{ExactLimits, empirical, ground_truth_ready, tv};
use playground::examples::TOY_RANDOM;
use playground::runner::Run;
use playground::toy::build;
use sampler_core::samplers::{Method, Params};

fn main() {
    let (mut lm, v) = build(TOY_RANDOM);
    let c = build_constraint(GrammarKind::Regex, "ab|ba|aab|c{1,2}", &v).unwrap();
    let exact = ground_truth_ready(&mut lm, &c, ExactLimits::toy(6)).unwrap();
    for e in &exact.entries {
        println!(
            "exact {:?} p={:.4} logp={:.3}",
            v.decode(&e.tokens),
            e.p,
            e.logp
        );
    }
    for (m, particles, tau) in [
        (Method::AwrsSmc, 8, 0.0),
        (Method::AwrsSmc, 8, 0.99),
        (Method::AwrsSmc, 8, 0.5),
        (Method::AwrsSmc, 64, 0.5),
        (Method::AwrsSmc, 64, 0.99),
        (Method::AwrsSmc, 256, 0.99),
        (Method::AwrsSmc, 256, 1.0),
        (Method::SmcGcd, 8, 0.99),
        (Method::WrsSmc, 8, 0.99),
        (Method::TwistedSmc, 8, 0.99),
        (Method::Lcd, 1, 0.5),
        (Method::Cars, 1, 0.5),
    ] {
        let p = Params {
            n: 2000,
            particles,
            ess_threshold: tau,
            max_tokens: 6,
            ..Params::default()
        };
        let run = Run::new(m, p, 5);
        let o = run.drive_ready(&mut build(TOY_RANDOM).0, &c, Some(&v));
        let s = run.samples();
        let emp = empirical(s.iter().map(|s| (s.tokens.as_slice(), s.weight)));
        let pc = emp
            .iter()
            .filter(|(k, _)| v.decode(k) == b"c")
            .map(|(_, p)| p)
            .sum::<f64>();
        println!(
            "{m} M={particles} tau={tau}: {:?} TV={:.4} P(c)={pc:.4}",
            matches!(o, playground::runner::Outcome::Completed(_)),
            tv(&emp, &exact)
        );
        // Runs weighted by their evidence estimate Ĝ (the properly weighted combination).
        let ev: Vec<f64> = run
            .events_from(0)
            .iter()
            .filter_map(|e| match e.event {
                sampler_core::Event::Evidence { log_evidence, .. } => Some(log_evidence),
                _ => None,
            })
            .collect();
        if !ev.is_empty() {
            let emp = empirical(s.iter().map(|x| {
                (
                    x.tokens.as_slice(),
                    Some(x.weight.unwrap_or(0.0) * ev[x.run.unwrap()].exp()),
                )
            }));
            let pc = emp
                .iter()
                .filter(|(k, _)| v.decode(k) == b"c")
                .map(|(_, p)| p)
                .sum::<f64>();
            println!(
                "    evidence-weighted: TV={:.4} P(c)={pc:.4}",
                tv(&emp, &exact)
            );
        }
    }
}
