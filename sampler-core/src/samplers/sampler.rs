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
        // A constraint that failed on the way explains any other ending (a pruned trie, a dead
        // end) and voids a success.
        ctx.check_constraint()?;
        result?;
        Ok(ctx.counters())
    }
}
