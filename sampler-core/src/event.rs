//! What a sampler reports while it runs: the UI animates it, the CLI writes it as JSON lines.

use crate::TokenId;
use crate::counters::Counters;
use serde::{Deserialize, Serialize};

/// A `Token` event's most likely tokens: (token, probability, kept by the constraint).
pub type TopTokens = Vec<(TokenId, f64, bool)>;

/// One thing a sampler did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A token was drawn at `position` of the sequence being built.
    Token {
        /// Particle index for SMC, 0 otherwise.
        particle: usize,
        /// Position in the generated sequence.
        position: usize,
        /// The token drawn.
        token: TokenId,
        /// log P(token | prefix) under the unconstrained model.
        logp: f64,
        /// Mass of the allowed tokens (Z) when a mask was applied.
        kept_mass: Option<f64>,
        /// The most likely next tokens with their probabilities and whether they were allowed.
        top: TopTokens,
    },
    /// A sample (valid or not) was completed.
    SampleFinished {
        /// The token sequence, EOS included when present.
        tokens: Vec<TokenId>,
        /// log P of the sequence under the unconstrained model.
        logp: f64,
        /// Whether it satisfies the constraint.
        valid: bool,
        /// Its importance weight where the method has one.
        weight: Option<f64>,
    },
    /// A generation of a rejection sampler ended without a valid sample.
    Rejected {
        /// The tokens generated before the sampler stopped (it stops at the first
        /// non-viable prefix, except plain `rs`).
        tokens: Vec<TokenId>,
        /// log P of those tokens under the unconstrained model.
        logp: f64,
        /// Why: "non-viable prefix", "max tokens reached" or "dead end".
        reason: String,
    },
    /// A node joined the trie of a rejection sampler (or of ASAp) with mass `mass`.
    TrieInsert {
        /// The node's token prefix.
        prefix: Vec<TokenId>,
        /// p_u (rejection samplers) or c̃(u) (ASAp) when inserted.
        mass: f64,
    },
    /// Continuations of `prefix` were proven non-viable and now have mass 0.
    TriePrune {
        /// The prefix whose continuations were cut off.
        prefix: Vec<TokenId>,
        /// How many tokens were cut off.
        count: usize,
        /// The mass P(a|u)·p_ua removed from the node.
        removed: f64,
        /// The most likely pruned tokens with P(a|u), at most `top_k_events` of them.
        top: Vec<(TokenId, f64)>,
    },
    /// A node's mass dropped because one of its children's did (upward propagation).
    TrieUpdate {
        /// The node's token prefix.
        prefix: Vec<TokenId>,
        /// Its mass after the update.
        mass: f64,
        /// By how much it dropped.
        removed: f64,
    },
    /// ASAp's over-approximated expected future grammaticality c̃ at a prefix of the
    /// sample just drawn (emitted walking backward, seed 004 Alg. 1).
    EfgUpdate {
        /// The prefix.
        prefix: Vec<TokenId>,
        /// c̃(prefix) after the update.
        efg: f64,
    },
    /// An MCMC proposal (seed 000 Alg. 1): the chain cut its state at `cut`, regenerated
    /// `suffix` with GCD, and accepted it or not.
    McmcProposal {
        /// Which chain (`--n` runs independent chains).
        chain: usize,
        /// The step (1 for the first proposal after the initial GCD sample).
        step: usize,
        /// Tokens of the current state kept before regenerating.
        cut: usize,
        /// The regenerated tokens after the cut (EOS included when reached).
        suffix: Vec<TokenId>,
        /// log of P(w')q(w|w') / (P(w)q(w'|w)); −∞ for an invalid proposal.
        log_ratio: f64,
        /// The acceptance probability min(1, ratio).
        accept_prob: f64,
        /// Whether the chain moved to the proposal.
        accepted: bool,
    },
    /// SMC extended every active particle by one token (seed 003 App. A Alg. 2).
    ParticlesExtended {
        /// Which SMC run (`--n` runs independent ones).
        run: usize,
        /// The step (token position being generated).
        step: usize,
        /// The token each particle drew; `None` for particles already finished (waiting)
        /// or dead (no token allowed).
        tokens: Vec<Option<TokenId>>,
        /// Each particle's log weight after the extension.
        log_weights: Vec<f64>,
        /// Effective sample size (Σw)²/Σw² after the extension.
        ess: f64,
    },
    /// SMC resampled its particles because the ESS fell below τ·M.
    Resampled {
        /// Which SMC run.
        run: usize,
        /// The step after which it resampled.
        step: usize,
        /// For each new particle, the index of the old particle it copies.
        ancestors: Vec<usize>,
        /// The effective sample size that triggered it.
        ess: f64,
    },
    /// An SMC run ended: its estimate of log P(constraint) (log of the mean weight).
    Evidence {
        /// Which SMC run.
        run: usize,
        /// log Ĝ, −∞ when every particle died.
        log_evidence: f64,
    },
    /// P-GCD's HMM distillation finished an EM iteration (seed 001): the page draws its
    /// progress and the log-likelihood curve.
    HmmFit {
        /// Iterations done (1-based).
        iteration: usize,
        /// Iterations in all.
        iterations: usize,
        /// Log-likelihood per token of the sampled sequences before this iteration's update.
        log_likelihood: f64,
        /// The [`crate::hmm::HmmEngine`] that ran it (`cpu`, `burn-flex-f64`, ...); empty
        /// in events recorded before engines existed.
        #[serde(default)]
        engine: String,
    },
    /// P-GCD's guided proposal at one step of one particle (seed 001), after the token's
    /// `Token` event: how the HMM × automaton guide reshaped the model's next-token law.
    GuideStep {
        /// The particle.
        particle: usize,
        /// Position of the token in its sequence.
        position: usize,
        /// The token drawn.
        token: TokenId,
        /// The model's mass on the tokens the budget mask allows (Z, what `smc-gcd`
        /// would weigh by).
        mask_mass: f64,
        /// Σ P(v)·g̃(v) / Z over the allowed tokens, g̃ the guide relative to its largest
        /// value: 1 when the guide leaves the masked law as it is, small when it steers.
        guide_mass: f64,
        /// The particle's incremental weight P(v)/q(v) for the drawn token.
        weight: f64,
        /// The most likely tokens under the proposal q: (token, P(v), q(v)).
        top: Vec<(TokenId, f64, f64)>,
    },
    /// How much of the model's mass the constraint keeps, estimated during the run, and
    /// what follows from it: the sampler `auto` chose (`chosen`), advice that the
    /// running exact sampler will need many generations and which faithful sampler
    /// finishes instead (not `chosen`), or, with `log_mass` −∞ after the runs, that every
    /// particle of some runs of the SMC sampler `method` died (`chosen`: it was the one
    /// running). Front ends show `message` as it is.
    Estimate {
        /// log of the estimated P(valid within max tokens) (−∞ when none was seen).
        log_mass: f64,
        /// The sampler chosen or advised (its command-line name).
        method: String,
        /// Whether the run goes on with `method` (auto's choice) or only advises it.
        chosen: bool,
        /// One plain sentence, with the estimate and the reason.
        message: String,
    },
    /// A free-form progress note (phase changes, counters).
    Note {
        /// The message.
        message: String,
    },
}

/// Receives events; may ask the run to stop.
pub trait EventSink {
    /// Records one event.
    fn emit(&mut self, event: Event);
    /// Whether the run should stop at the next check (the Stop button, Esc). Checked
    /// before every model call; a model call that fails while this says so ends the run
    /// as cancelled ([`crate::SampleError::Cancelled`]), whatever the model's error says.
    fn cancelled(&self) -> bool {
        false
    }
    /// The run's counters so far, published by the sampler's context before and after
    /// every model call (live progress; a cap on model calls reads them in `cancelled`).
    fn progress(&mut self, _counters: &Counters) {}
}

/// Discards every event.
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&mut self, _event: Event) {}
}

/// Keeps every event in memory (tests, the CLI's `--events`).
#[derive(Default)]
pub struct VecSink(pub Vec<Event>);

impl EventSink for VecSink {
    fn emit(&mut self, event: Event) {
        self.0.push(event);
    }
}
