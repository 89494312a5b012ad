//! The samplers of the five papers, generic over the model and constraint seams.
//!
//! # Key types
//! - [`Method`]: the command-line name of each sampler.
//! - [`Params`]: run parameters (`n`, steps, particles, max tokens, ...).
//! - [`Ctx`]: the run context; every model and constraint call goes through it and is counted.
//!   [`with_quiet_ctx`] makes one that drops events and samples, for exact enumerations.
//! - [`Sample`] and [`Counters`]: what a run produces and what it cost.
//! - [`awrs`]: the WRS / AWRS / ARS token samplers (seed 003) and `awrs-lcd`.
//! - [`mcmc`]: grammar-aligned MCMC (seed 000); [`smc`]: SMC with properly weighted
//!   token proposals (seed 003 App. A), P-GCD's HMM-guided one among them (seed 001,
//!   [`crate::hmm`]).
//! - [`path_enum`]: enumerates a sampler's random paths for exact tests.
//! - [`pgcd`]: P-GCD (seed 001): the HMM distilled from the model, its guide, SMC.
//!
//! # Usage
//! A [`Sampler`] is configured (method, parameters, vocabulary, HMM engine), then run on
//! a model and a constraint with the run's [`Io`]:
//! ```
//! use sampler_core::samplers::{Io, Method, Params, Sampler};
//! use sampler_core::toy::{gsk_constraint, gsk_lm};
//! use sampler_core::{block_on, NullSink, SeededRng};
//!
//! let (mut lm, c) = (gsk_lm(), gsk_constraint());
//! let mut samples = Vec::new();
//! let sampler = Sampler::new(Method::Lcd).params(&Params { n: 3, ..Params::default() });
//! let io = Io { rng: &mut SeededRng::new(1), sink: &mut NullSink, out: &mut |s| samples.push(s.clone()) };
//! block_on(sampler.run(&mut lm, &c, io)).unwrap();
//! assert!(samples.iter().all(|s| s.valid));
//! ```

mod ancestral;
pub mod asap;
pub mod auto;
pub mod awrs;
mod context;
pub mod cut;
pub mod mcmc;
mod method;
mod params;
pub mod path_enum;
pub mod pgcd;
pub mod rejection;
mod sample;
mod sampler;
pub mod smc;
pub mod trie;
pub mod util;
pub mod watch;

pub use ancestral::{Generation, Masking, generate};
pub use context::{Ctx, with_quiet_ctx};
pub use method::Method;
pub use params::{MAX_BATCH, MAX_PARTICLES, Params, Resampling};
pub use sample::{Counters, Sample};
pub use sampler::{Io, Sampler};

use crate::{Constraint, LanguageModel, SampleError};

/// Runs `method`'s sampler in `ctx`.
async fn dispatch<L: LanguageModel, C: Constraint>(
    method: Method,
    ctx: &mut Ctx<'_, L, C>,
) -> Result<(), SampleError> {
    match method {
        Method::Lm => ancestral::run(ctx, Masking::None).await?,
        Method::Lcd => ancestral::run(ctx, Masking::Viable).await?,
        Method::GcdBudget => ancestral::run(ctx, Masking::Budget).await?,
        Method::Rs => rejection::run(ctx, rejection::Strategy::Rs).await?,
        Method::SampleVerify => rejection::run(ctx, rejection::Strategy::SampleVerify).await?,
        Method::Ars => rejection::run(ctx, rejection::Strategy::Ars).await?,
        Method::Rsft => rejection::run(ctx, rejection::Strategy::Rsft).await?,
        Method::Cars => rejection::run(ctx, rejection::Strategy::Cars).await?,
        Method::Asap => asap::run(ctx).await?,
        Method::AwrsLcd => awrs::run_lcd(ctx).await?,
        Method::McmcUniform => mcmc::run(ctx, mcmc::Truncation::Uniform).await?,
        Method::McmcPriority => mcmc::run(ctx, mcmc::Truncation::Priority).await?,
        Method::McmcRestart => mcmc::run(ctx, mcmc::Truncation::Restart).await?,
        Method::AwrsSmc => smc::run(ctx, smc::TokenProposal::Awrs).await?,
        Method::WrsSmc => smc::run(ctx, smc::TokenProposal::Wrs).await?,
        Method::TwistedSmc => smc::run(ctx, smc::TokenProposal::Twisted).await?,
        Method::SmcGcd => smc::run(ctx, smc::TokenProposal::masking(ctx.is_regular())).await?,
        Method::PGcdSmc => pgcd::run(ctx).await?,
        Method::Auto => auto::run(ctx).await?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toy::{gsk_constraint, gsk_lm};
    use crate::{LmError, NullSink, SeededRng, TokenId, block_on};

    fn draw(method: Method, n: usize, seed: u64) -> Vec<Sample> {
        let (mut lm, c) = (gsk_lm(), gsk_constraint());
        let params = Params {
            n,
            ..Params::default()
        };
        let mut out = Vec::new();
        block_on(Sampler::new(method).params(&params).run(
            &mut lm,
            &c,
            Io {
                rng: &mut SeededRng::new(seed),
                sink: &mut NullSink,
                out: &mut |s| out.push(s.clone()),
            },
        ))
        .unwrap();
        out
    }

    /// Token masking on G_sk picks `0` first 45% of the time and is then trapped into
    /// `00000` (P^L(00000) ≈ 10⁻⁹): the bias of seed 004 Ex. 3, with a binomial check.
    #[test]
    fn lcd_shows_the_gsk_bias() {
        let s = draw(Method::Lcd, 2000, 3);
        assert!(s.iter().all(|s| s.valid && s.tokens.len() == 6));
        let zeros = s.iter().filter(|s| s.tokens[..5] == [0; 5]).count() as f64;
        // Binomial(2000, 0.45): sd ≈ 22; 5 sd either side.
        assert!((zeros - 900.0).abs() < 112.0, "00000 drawn {zeros} times");
        // Ending with 1: 0.55 · 0.55 ≈ 0.30 (seed 004 reports 30%).
        let ends1 = s.iter().filter(|s| s.tokens[4] == 1).count() as f64;
        assert!((ends1 - 605.0).abs() < 112.0, "ends with 1: {ends1}");
    }

    /// `lm` ignores the constraint but reports validity; G_sk's LM always makes 5 tokens.
    #[test]
    fn lm_reports_validity() {
        let s = draw(Method::Lm, 500, 5);
        let valid = s.iter().filter(|s| s.valid).count();
        // P(valid) = P(first token 1) ≈ 0.55 (00000 has probability ~1e-9).
        assert!((valid as f64 - 275.0).abs() < 60.0, "{valid} valid");
        assert!(s.iter().all(|s| s.valid == (s.tokens[0] == 1)));
    }

    #[test]
    fn bad_params_and_non_regular_constraints_are_refused() {
        let (mut lm, c) = (gsk_lm(), gsk_constraint());
        let mut run_with = |m, p: Params| {
            block_on(Sampler::new(m).params(&p).run(
                &mut lm,
                &c,
                Io {
                    rng: &mut SeededRng::new(0),
                    sink: &mut NullSink,
                    out: &mut |_| {},
                },
            ))
            .unwrap_err()
            .to_string()
        };
        let n0 = Params {
            n: 0,
            ..Params::default()
        };
        assert!(run_with(Method::Lcd, n0).contains("--n"));
        let too_many = Params {
            particles: MAX_PARTICLES + 1,
            ..Params::default()
        };
        assert!(run_with(Method::AwrsSmc, too_many).contains("--particles must be at most"));
        assert!(run_with(Method::GcdBudget, Params::default()).contains("regular"));
        // A model over another vocabulary than the constraint's.
        let mut other = crate::toy::RandomLm::new(5, 4, 1, 1);
        let e = block_on(Sampler::new(Method::Lcd).params(&Params::default()).run(
            &mut other,
            &c,
            Io {
                rng: &mut SeededRng::new(0),
                sink: &mut NullSink,
                out: &mut |_| {},
            },
        ))
        .unwrap_err();
        assert!(e.to_string().contains("the model has 5 tokens"), "{e}");
    }

    /// When every allowed token has probability zero, the run ends with a dead-end message.
    #[test]
    fn dead_end_is_reported() {
        use crate::toy::{FiniteLanguage, gsk_vocabulary};
        // After five tokens the G_sk model puts all its mass on EOS, but this language
        // needs a sixth `0`.
        let c = FiniteLanguage::new(gsk_vocabulary(), vec![b"000000".to_vec()]);
        let mut lm = gsk_lm();
        let p = Params::default();
        let e = block_on(
            Sampler::new(Method::Lcd)
                .params(&p)
                .vocabulary(&crate::toy::gsk_vocabulary())
                .run(
                    &mut lm,
                    &c,
                    Io {
                        rng: &mut SeededRng::new(0),
                        sink: &mut NullSink,
                        out: &mut |_| {},
                    },
                ),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "dead end after \"00000\"");
    }

    /// Four samples, three MCMC steps, three particles: every sampler's run kept short.
    fn few_of_each() -> Params {
        Params {
            n: 4,
            steps: 3,
            particles: 3,
            ..Params::default()
        }
    }

    /// A model whose answers stop being numbers after `good` calls (a corrupt file's NaN
    /// weights, an overflow).
    struct NanAfter {
        good: usize,
        calls: usize,
    }

    impl LanguageModel for NanAfter {
        fn vocab_size(&self) -> usize {
            3
        }
        fn eos(&self) -> TokenId {
            gsk_lm().eos()
        }
        async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
            self.calls += 1;
            match self.calls > self.good {
                true => Ok(vec![f64::NAN; 3]),
                false => gsk_lm().logprobs(prefix).await,
            }
        }
    }

    /// Log-probabilities that are not numbers end every sampler's run with a model error
    /// naming them, at the first such answer: no sampler draws from them (AWRS's rejection
    /// loop used to draw the same token forever from a NaN total).
    #[test]
    fn a_model_answering_nan_ends_every_run_with_its_error() {
        let params = few_of_each();
        for method in Method::ALL.into_iter().filter(|m| !m.needs_regular()) {
            for good in [0, 1, 4] {
                let mut lm = NanAfter { good, calls: 0 };
                let r = block_on(Sampler::new(method).params(&params).run(
                    &mut lm,
                    &gsk_constraint(),
                    Io {
                        rng: &mut SeededRng::new(good as u64),
                        sink: &mut NullSink,
                        out: &mut |_| {},
                    },
                ));
                match r {
                    Err(SampleError::Lm(e)) => {
                        assert!(e.0.contains("log-probability NaN"), "{method}: {e}");
                        // No call after the batch holding the first NaN answer.
                        assert!(
                            lm.calls <= good + params.particles,
                            "{method}: {}",
                            lm.calls
                        );
                    }
                    other => panic!("{method}, NaN after {good} calls: {other:?}"),
                }
            }
        }
    }

    /// A constraint that fails mid-run ends every sampler's run with its error, and no
    /// sample is handed out after the failure (it could be biased by the failed answer).
    #[test]
    fn a_constraint_error_ends_the_run_with_it() {
        use crate::toy::Failing;
        let params = few_of_each();
        for method in Method::ALL.into_iter().filter(|m| !m.needs_regular()) {
            for fail_at in [1, 2, 5, 13, 40, 100] {
                let c = Failing::new(gsk_constraint(), fail_at);
                let mut after_failure = 0;
                let r = block_on(Sampler::new(method).params(&params).run(
                    &mut gsk_lm(),
                    &c,
                    Io {
                        rng: &mut SeededRng::new(fail_at as u64),
                        sink: &mut NullSink,
                        out: &mut |_| after_failure += usize::from(c.failed()),
                    },
                ));
                if c.failed() {
                    match r {
                        Err(SampleError::Constraint(m)) => {
                            assert_eq!(m, format!("failed at call {fail_at}"), "{method}")
                        }
                        other => panic!("{method}, fail at {fail_at}: {other:?}"),
                    }
                    assert_eq!(after_failure, 0, "{method}, fail at {fail_at}");
                } else {
                    assert!(r.is_ok(), "{method}, fail at {fail_at}: {r:?}");
                }
            }
        }
    }
}
