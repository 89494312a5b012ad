//! What a sampler reports while it runs: the UI animates it, the CLI writes it as JSON lines.

use crate::TokenId;
use serde::Serialize;

/// One thing a sampler did.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
        top: Vec<(TokenId, f64, bool)>,
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
    /// Whether the run should stop at the next check (the Stop button, Esc).
    fn cancelled(&self) -> bool {
        false
    }
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
