//! The token view: the latest step's top next tokens.

use super::Labels;
use sampler_core::{Event, TokenId};

/// One of the most likely next tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct TopToken {
    /// Its id.
    pub token: TokenId,
    /// Its text.
    pub label: String,
    /// P(token | prefix) under the unconstrained model.
    pub p: f64,
    /// Whether the constraint (or mask) allowed it; greyed out when not.
    pub allowed: bool,
}

/// The latest `Token` event, shown as a bar chart, and the sequence being built.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TokenView {
    /// Particle the latest token belongs to (SMC), 0 otherwise.
    pub particle: usize,
    /// Position of the latest token.
    pub position: usize,
    /// The top next tokens, most likely first.
    pub top: Vec<TopToken>,
    /// The mass Z kept by the mask (or the proposal's weight), when the method reports it.
    pub kept_mass: Option<f64>,
    /// The token drawn.
    pub drawn: Option<TopToken>,
    /// The sequence being built by particle 0 (positions up to the latest).
    pub sequence: Vec<TokenId>,
    /// `Token` events seen.
    pub steps: usize,
}

impl TokenView {
    /// Updates from one event (only `Token` events matter).
    pub fn apply(&mut self, event: &Event, labels: &Labels) {
        let Event::Token {
            particle,
            position,
            token,
            logp,
            kept_mass,
            top,
        } = event
        else {
            return;
        };
        self.particle = *particle;
        self.position = *position;
        self.kept_mass = *kept_mass;
        self.top = top
            .iter()
            .map(|&(t, p, allowed)| TopToken {
                token: t,
                label: labels.label(t),
                p,
                allowed,
            })
            .collect();
        let allowed = self
            .top
            .iter()
            .find(|t| t.token == *token)
            .is_none_or(|t| t.allowed);
        self.drawn = Some(TopToken {
            token: *token,
            label: labels.label(*token),
            p: logp.exp(),
            allowed,
        });
        if *particle == 0 {
            self.sequence.truncate(*position);
            self.sequence.push(*token);
        }
        self.steps += 1;
    }
}
