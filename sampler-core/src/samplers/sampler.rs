//! A sampler run, configured before it runs, as a regex-automata engine is built: the
//! method, its parameters, the vocabulary (for labels in events) and the engine of
//! P-GCD's HMM work, then [`Sampler::run`] on a model, a constraint and the run's [`Io`].
//!
//! ```
//! use sampler_core::samplers::{Io, Method, Params, Sampler};
//! use sampler_core::toy::{gsk_constraint, gsk_lm};
//! use sampler_core::{block_on, NullSink, SeededRng};
//!
//! let (mut lm, c) = (gsk_lm(), gsk_constraint());
//! let sampler = Sampler::new(Method::Lcd).params(&Params { n: 3, ..Params::default() });
//! let mut samples = Vec::new();
//! let io = Io { rng: &mut SeededRng::new(1), sink: &mut NullSink, out: &mut |s| samples.push(s.clone()) };
//! block_on(sampler.run(&mut lm, &c, io)).unwrap();
//! assert!(samples.len() == 3 && samples.iter().all(|s| s.valid));
//! ```

use super::{Counters, Ctx, Method, Params, Sample};
use crate::hmm::{CpuHmm, HmmEngine};
use crate::{Constraint, EventSink, LanguageModel, RandomSource, SampleError, Vocabulary};

/// What a run reads and writes besides the model and the constraint: its randomness, the
/// sink of its events, and where each finished sample goes (as soon as it exists).
pub struct Io<'a> {
    /// The run's random numbers (seeded for reproducible runs).
    pub rng: &'a mut dyn RandomSource,
    /// Every decision, as an event (the page animates them; tests assert on them).
    pub sink: &'a mut dyn EventSink,
    /// Each finished sample, carrying the run's counters.
    pub out: &'a mut dyn FnMut(&Sample),
}

/// A configured sampler: [`Sampler::new`], the settings, then [`Sampler::run`].
#[derive(Clone)]
pub struct Sampler<'e> {
    method: Method,
    params: Params,
    vocab: Option<&'e Vocabulary>,
    hmm_engine: &'e dyn HmmEngine,
}

impl<'e> Sampler<'e> {
    /// `method` with the default parameters, no vocabulary, and P-GCD's HMM work on the
    /// CPU reference ([`CpuHmm`]).
    pub fn new(method: Method) -> Self {
        Sampler {
            method,
            params: Params::default(),
            vocab: None,
            hmm_engine: &CpuHmm,
        }
    }

    /// The run's parameters (samples, steps, particles, max tokens …).
    pub fn params(mut self, params: &Params) -> Self {
        self.params = params.clone();
        self
    }

    /// The vocabulary, when there is one: events then carry token text.
    pub fn vocabulary(mut self, vocab: impl Into<Option<&'e Vocabulary>>) -> Self {
        self.vocab = vocab.into();
        self
    }

    /// Where P-GCD's dense work runs (EM steps, the guide's table): `hmm-burn` runs it on
    /// burn.
    pub fn hmm_engine(mut self, engine: &'e dyn HmmEngine) -> Self {
        self.hmm_engine = engine;
        self
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Runs the sampler on `lm` under `constraint`; the counters of the whole run.
    pub async fn run<L: LanguageModel, C: Constraint>(
        &self,
        lm: &mut L,
        constraint: &C,
        io: Io<'_>,
    ) -> Result<Counters, SampleError> {
        let (method, params) = (self.method, &self.params);
        params.validate()?;
        if lm.vocab_size() != constraint.vocab_size() {
            return Err(SampleError::Unsupported(format!(
                "the model has {} tokens but the constraint was built for {}; build the constraint \
                 from the model's vocabulary",
                lm.vocab_size(),
                constraint.vocab_size()
            )));
        }
        if method.needs_regular() && constraint.regular().is_none() {
            return Err(SampleError::Unsupported(format!(
                "method {method} needs a regular constraint (a regex, or a grammar that is regular); \
                 this one is context-free"
            )));
        }
        let Io { rng, sink, out } = io;
        let mut ctx = Ctx::new(lm, constraint, rng, sink, params, self.vocab, out)
            .with_hmm_engine(self.hmm_engine);
        let result = super::dispatch(method, &mut ctx).await;
        // The final counters, for live progress (a run that ends on checks after its last
        // model call or sample).
        ctx.publish_progress();
        // A constraint that failed on the way explains any other ending (a pruned trie, a dead
        // end) and voids a success.
        ctx.check_constraint()?;
        result?;
        Ok(ctx.counters())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toy::{gsk_constraint, gsk_lm};
    use crate::{Event, EventSink, LmError, SeededRng, TokenId};
    use std::cell::Cell;
    use std::rc::Rc;

    /// A sink that says Stop once `stop` is set, and keeps the last counters published.
    struct StopSink {
        stop: Rc<Cell<bool>>,
        last: Counters,
        published: usize,
    }

    impl EventSink for StopSink {
        fn emit(&mut self, _: Event) {}
        fn cancelled(&self) -> bool {
            self.stop.get()
        }
        fn progress(&mut self, c: &Counters) {
            self.last = *c;
            self.published += 1;
        }
    }

    /// G_sk's model that, at its `after`-th call, presses Stop and fails that call (as the
    /// page's model does when Stop comes during a forward pass).
    struct StopsAt {
        calls: u64,
        after: u64,
        stop: Rc<Cell<bool>>,
    }

    impl LanguageModel for StopsAt {
        fn vocab_size(&self) -> usize {
            3
        }
        fn eos(&self) -> TokenId {
            2
        }
        async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, LmError> {
            self.calls += 1;
            if self.calls == self.after {
                self.stop.set(true);
                return Err(LmError("the forward pass was abandoned".into()));
            }
            gsk_lm().logprobs(prefix).await
        }
    }

    fn run(lm: &mut impl LanguageModel, sink: &mut StopSink) -> Result<Counters, SampleError> {
        let params = Params {
            n: 50,
            ..Params::default()
        };
        crate::block_on(Sampler::new(Method::Cars).params(&params).run(
            lm,
            &gsk_constraint(),
            Io {
                rng: &mut SeededRng::new(1),
                sink,
                out: &mut |_| {},
            },
        ))
    }

    /// Stop is typed: a model call that fails while the sink says Stop ends the run as
    /// `Cancelled`, whatever the model's message; the same failure without Stop is the
    /// model's error.
    #[test]
    fn a_model_error_under_stop_is_a_cancellation() {
        let stop = Rc::new(Cell::new(false));
        let mut sink = StopSink {
            stop: stop.clone(),
            last: Counters::default(),
            published: 0,
        };
        let mut lm = StopsAt {
            calls: 0,
            after: 7,
            stop: stop.clone(),
        };
        assert_eq!(run(&mut lm, &mut sink), Err(SampleError::Cancelled));
        assert_eq!(
            sink.last.lm_calls, 7,
            "the counters published before the end"
        );

        struct Fails;
        impl LanguageModel for Fails {
            fn vocab_size(&self) -> usize {
                3
            }
            fn eos(&self) -> TokenId {
                2
            }
            async fn logprobs(&mut self, _: &[TokenId]) -> Result<Vec<f64>, LmError> {
                Err(LmError("the GPU was lost".into()))
            }
        }
        stop.set(false);
        let e = run(&mut Fails, &mut sink).unwrap_err();
        assert_eq!(e, SampleError::Lm(LmError("the GPU was lost".into())));
    }

    /// The counters reach the sink as the run goes (before and after every model call, at
    /// every sample), and the last ones published are the run's totals.
    #[test]
    fn progress_is_published_from_the_context() {
        let mut sink = StopSink {
            stop: Rc::new(Cell::new(false)),
            last: Counters::default(),
            published: 0,
        };
        let total = run(&mut gsk_lm(), &mut sink).unwrap();
        assert_eq!(sink.last, total);
        assert!(sink.published as u64 >= 2 * total.lm_calls + 50);
    }
}
