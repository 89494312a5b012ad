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
    /// P-GCD's guide at the latest step, when the method has one.
    pub guide: Option<GuideView>,
    /// The guide's mass per step of particle 0: `(position, Z, guide mass)`.
    pub guide_steps: Vec<(usize, f64, f64)>,
}

/// P-GCD's proposal at one step (a `GuideStep` event).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GuideView {
    /// The particle.
    pub particle: usize,
    /// The position.
    pub position: usize,
    /// The model's mass on the tokens the budget mask allows.
    pub mask_mass: f64,
    /// Σ P(v)·g̃(v) / Z: how much of that mass the guide keeps.
    pub guide_mass: f64,
    /// The drawn token's incremental weight P(v)/q(v).
    pub weight: f64,
    /// The token drawn.
    pub drawn: TokenId,
    /// The most likely tokens under q.
    pub top: Vec<GuideToken>,
}

/// One token of [`GuideView::top`].
#[derive(Clone, Debug, PartialEq)]
pub struct GuideToken {
    /// Its id.
    pub token: TokenId,
    /// Its text.
    pub label: String,
    /// P(v | prefix) under the model.
    pub p: f64,
    /// q(v): its probability under the guided proposal.
    pub q: f64,
}

impl TokenView {
    /// Updates from one event (`Token` and `GuideStep` events).
    pub fn apply(&mut self, event: &Event, labels: &Labels) {
        if let Event::GuideStep {
            particle,
            position,
            token,
            mask_mass,
            guide_mass,
            weight,
            top,
        } = event
        {
            self.guide = Some(GuideView {
                particle: *particle,
                position: *position,
                mask_mass: *mask_mass,
                guide_mass: *guide_mass,
                weight: *weight,
                drawn: *token,
                top: top
                    .iter()
                    .map(|&(t, p, q)| GuideToken {
                        token: t,
                        label: labels.label(t),
                        p,
                        q,
                    })
                    .collect(),
            });
            if *particle == 0 {
                self.guide_steps.truncate(*position);
                self.guide_steps.push((*position, *mask_mass, *guide_mass));
            }
            return;
        }
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
