//! The run context every sampler works through: counted model and constraint calls,
//! randomness, events, cancellation and the output callback.

use super::{Counters, Params, Sample};
use crate::hmm::{CpuHmm, HmmEngine};
use crate::lm::check_logprobs;
use crate::{
    Constraint, Event, EventSink, LanguageModel, LmError, NullSink, RandomSource, SampleError,
    TensorizedAutomaton, TokenId, TokenSet, Vocabulary,
};

/// Everything a sampler needs during one run. The model and the constraint are reached
/// only through its methods, which count every model call and constraint check (EOS
/// included) and check for Stop and for constraint errors, so no sampler can bypass them.
pub struct Ctx<'a, L, C> {
    lm: &'a mut L,
    constraint: &'a C,
    rng: &'a mut dyn RandomSource,
    sink: &'a mut dyn EventSink,
    params: &'a Params,
    counters: Counters,
    vocab: Option<&'a Vocabulary>,
    out: &'a mut dyn FnMut(&Sample),
    hmm_engine: &'a dyn HmmEngine,
}

/// Runs `f` with a context over `lm`, `constraint` and `rng` that drops its events and
/// samples: how the exact enumerations drive one sampler step at a time.
pub fn with_quiet_ctx<L: LanguageModel, C: Constraint, R>(
    lm: &mut L,
    constraint: &C,
    rng: &mut dyn RandomSource,
    params: &Params,
    f: impl FnOnce(&mut Ctx<'_, L, C>) -> R,
) -> R {
    let (mut sink, mut out) = (NullSink, |_: &Sample| {});
    let mut ctx = Ctx::new(lm, constraint, rng, &mut sink, params, None, &mut out);
    f(&mut ctx)
}

impl<'a, L: LanguageModel, C: Constraint> Ctx<'a, L, C> {
    /// A context for one run: `vocab` decodes tokens for messages (`None` prints token
    /// ids); `out` receives each finished sample as soon as it exists.
    pub fn new(
        lm: &'a mut L,
        constraint: &'a C,
        rng: &'a mut dyn RandomSource,
        sink: &'a mut dyn EventSink,
        params: &'a Params,
        vocab: Option<&'a Vocabulary>,
        out: &'a mut dyn FnMut(&Sample),
    ) -> Self {
        Ctx {
            lm,
            constraint,
            rng,
            sink,
            params,
            counters: Counters::default(),
            vocab,
            out,
            hmm_engine: &CpuHmm,
        }
    }

    /// Runs P-GCD's tensor work (EM steps, guide table) on `engine` instead of the CPU
    /// reference.
    pub fn with_hmm_engine(mut self, engine: &'a dyn HmmEngine) -> Self {
        self.hmm_engine = engine;
        self
    }

    /// Where P-GCD's tensor work runs.
    pub fn hmm_engine(&self) -> &'a dyn HmmEngine {
        self.hmm_engine
    }

    /// The run's parameters.
    pub fn params(&self) -> &'a Params {
        self.params
    }

    /// The run's randomness: every random choice goes through here.
    pub fn rng(&mut self) -> &mut dyn RandomSource {
        &mut *self.rng
    }

    /// The event sink (for the trie's and the views' events).
    pub fn sink(&mut self) -> &mut dyn EventSink {
        &mut *self.sink
    }

    /// Sends `event` to the sink.
    pub fn emit(&mut self, event: Event) {
        self.sink.emit(event);
    }

    /// The costs so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Counts `n` more generations (sequences started from the beginning).
    pub fn count_generations(&mut self, n: usize) {
        self.counters.generations += n as u64;
    }

    /// The vocabulary size (the constraint's, which the model shares).
    pub fn vocab_size(&self) -> usize {
        self.constraint.vocab_size()
    }

    /// The end-of-sequence token.
    pub fn eos(&self) -> TokenId {
        self.constraint.eos()
    }

    /// The constraint's state before any token.
    pub fn initial(&self) -> C::State {
        self.constraint.initial()
    }

    /// Whether the constraint is regular (budget masks exist).
    pub fn is_regular(&self) -> bool {
        self.constraint.regular().is_some()
    }

    /// The tensorized automaton of a regular constraint, when it has one.
    pub fn tensorized(&self) -> Option<&'a TensorizedAutomaton> {
        self.constraint.regular()?.tensorized()
    }

    /// Fails with [`SampleError::Cancelled`] when the sink asks to stop.
    pub fn check_cancelled(&self) -> Result<(), SampleError> {
        if self.sink.cancelled() {
            Err(SampleError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// Fails with [`SampleError::Constraint`] when the constraint met an error since the
    /// last check (its answers since then are unreliable).
    pub fn check_constraint(&self) -> Result<(), SampleError> {
        match self.constraint.take_error() {
            Some(e) => Err(SampleError::Constraint(e)),
            None => Ok(()),
        }
    }

    /// Next-token log-probabilities after `prefix` (counted; checks for Stop and for a
    /// constraint error first, so no decision is built on an unreliable answer, and that
    /// the answer holds numbers, [`check_logprobs`]).
    pub async fn logprobs(&mut self, prefix: &[TokenId]) -> Result<Vec<f64>, SampleError> {
        self.before_model_call()?;
        self.counters.lm_calls += 1;
        let lp = self.lm.logprobs(prefix).await;
        let lp = self.after_model_call(lp)?;
        check_logprobs(&lp)?;
        Ok(lp)
    }

    /// Hands the counters so far to the sink ([`EventSink::progress`]).
    pub fn publish_progress(&mut self) {
        self.sink.progress(&self.counters);
    }

    /// Publishes the counters, then checks for Stop (a cap on model calls sees the calls
    /// made so far) and for a constraint error.
    fn before_model_call(&mut self) -> Result<(), SampleError> {
        self.publish_progress();
        self.check_cancelled()?;
        self.check_constraint()
    }

    /// Counts the model's forward tokens and publishes the counters; a model error while
    /// the sink says Stop is the run being cancelled (a model may abort its forward pass
    /// at Stop), never a failure.
    fn after_model_call<T>(&mut self, r: Result<T, LmError>) -> Result<T, SampleError> {
        self.counters.forward_tokens = self.lm.forward_tokens();
        self.publish_progress();
        match r {
            Err(_) if self.sink.cancelled() => Err(SampleError::Cancelled),
            r => Ok(r?),
        }
    }

    /// Batched [`Ctx::logprobs`] (SMC particles).
    pub async fn logprobs_batch(
        &mut self,
        prefixes: &[&[TokenId]],
    ) -> Result<Vec<Vec<f64>>, SampleError> {
        self.before_model_call()?;
        self.counters.lm_calls += prefixes.len() as u64;
        let lp = self.lm.logprobs_batch(prefixes).await;
        let lp = self.after_model_call(lp)?;
        lp.iter().try_for_each(|l| check_logprobs(l))?;
        Ok(lp)
    }

    /// The constraint's state after `token` (one counted check).
    pub fn advance(&mut self, state: &C::State, token: TokenId) -> Option<C::State> {
        self.counters.constraint_checks += 1;
        self.constraint.advance(state, token)
    }

    /// Whether `token` may follow (one counted check).
    pub fn allows(&mut self, state: &C::State, token: TokenId) -> bool {
        self.counters.constraint_checks += 1;
        self.constraint.allows(state, token)
    }

    /// Whether the bytes so far are a sentence, so EOS may follow (one counted check).
    pub fn is_complete(&mut self, state: &C::State) -> bool {
        self.counters.constraint_checks += 1;
        self.constraint.is_complete(state)
    }

    /// The randomness and a counted `allows` check on `state`, borrowed together: the
    /// token samplers (WRS, AWRS, ARS) draw and check in one loop.
    pub fn rng_and_check<'s>(
        &'s mut self,
        state: &'s C::State,
    ) -> (&'s mut dyn RandomSource, impl FnMut(TokenId) -> bool + 's) {
        let (constraint, counters) = (self.constraint, &mut self.counters);
        let allows = move |t: TokenId| {
            counters.constraint_checks += 1;
            constraint.allows(state, t)
        };
        (&mut *self.rng, allows)
    }

    /// The automaton state of [`Ctx::tensorized`] that `state` stands for (counted like a
    /// mask: the guide reads the budget mask off it).
    pub fn tensor_state(&mut self, state: &C::State) -> Option<u32> {
        self.counters.constraint_checks += self.constraint.vocab_size() as u64;
        self.constraint.regular()?.tensor_state(state)
    }

    /// The full mask (counted as one check per vocabulary token).
    pub fn mask(&mut self, state: &C::State) -> TokenSet {
        self.counters.constraint_checks += self.constraint.vocab_size() as u64;
        self.constraint.mask(state)
    }

    /// The budget-aware mask (counted like [`Ctx::mask`]); an error when the constraint
    /// is not regular.
    pub fn budget_mask(
        &mut self,
        state: &C::State,
        remaining: usize,
    ) -> Result<TokenSet, SampleError> {
        self.counters.constraint_checks += self.constraint.vocab_size() as u64;
        self.constraint
            .regular()
            .map(|r| r.budget_mask(state, remaining))
            .ok_or_else(|| {
                SampleError::Unsupported(
                    "this method needs a regular constraint (regex, or a grammar that is regular)"
                        .into(),
                )
            })
    }

    /// The text of `tokens` for messages.
    pub fn describe(&self, tokens: &[TokenId]) -> String {
        match self.vocab {
            Some(v) => String::from_utf8_lossy(&v.decode(tokens)).into_owned(),
            None => format!("{tokens:?}"),
        }
    }

    /// A dead-end error naming the text generated so far (`samplers::Sampler::run` reports the
    /// constraint's error instead when a failed answer caused it).
    pub fn dead_end(&self, tokens: &[TokenId]) -> SampleError {
        SampleError::DeadEnd {
            prefix: self.describe(tokens),
        }
    }

    /// Emits a `Token` event with the top tokens of `logprobs` (and whether `allowed` kept them).
    pub fn emit_token(
        &mut self,
        particle: usize,
        position: usize,
        token: TokenId,
        logprobs: &[f64],
        kept_mass: Option<f64>,
        allowed: Option<&TokenSet>,
    ) {
        let top = self.token_top(logprobs, allowed);
        self.emit_token_with_top(
            particle,
            position,
            token,
            logprobs[token as usize],
            kept_mass,
            top,
        );
    }

    /// The `Token` event's top tokens of `logprobs`: (token, probability, kept by `allowed`).
    pub fn token_top(
        &self,
        logprobs: &[f64],
        allowed: Option<&TokenSet>,
    ) -> crate::event::TopTokens {
        super::util::top_k(logprobs, self.params.top_k_events)
            .into_iter()
            .map(|t| {
                let ok = allowed.is_none_or(|m| m.contains(t));
                (t, logprobs[t as usize].exp(), ok)
            })
            .collect()
    }

    /// Emits a `Token` event whose top tokens were computed already ([`Ctx::token_top`]).
    pub fn emit_token_with_top(
        &mut self,
        particle: usize,
        position: usize,
        token: TokenId,
        logp: f64,
        kept_mass: Option<f64>,
        top: crate::event::TopTokens,
    ) {
        self.sink.emit(Event::Token {
            particle,
            position,
            token,
            logp,
            kept_mass,
            top,
        });
    }

    /// Records a finished sample: emits `SampleFinished` and hands it to the output callback;
    /// fails instead when the constraint met an error, as the sample may rest on it.
    pub fn finish(
        &mut self,
        tokens: Vec<TokenId>,
        logp: f64,
        valid: bool,
        weight: Option<f64>,
        run: Option<usize>,
    ) -> Result<(), SampleError> {
        self.check_constraint()?;
        let s = Sample {
            tokens,
            logp,
            valid,
            weight,
            run,
            counters: self.counters,
        };
        self.publish_progress();
        self.sink.emit(Event::SampleFinished {
            tokens: s.tokens.clone(),
            logp,
            valid,
            weight,
        });
        (self.out)(&s);
        Ok(())
    }
}
