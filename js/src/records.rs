//! The lines of `strait enumerate` and `strait score`, as JavaScript hands them out (the
//! sample records are `sampler_core::Record`).

use sampler_core::TokenId;
use serde::Serialize;

/// One sequence of an exact distribution (`strait enumerate`).
#[derive(Serialize)]
pub struct Enumerated {
    /// Its text.
    pub text: String,
    /// Its tokens, EOS included.
    pub tokens: Vec<TokenId>,
    /// log P under the unconstrained model.
    pub logp: f64,
    /// Its probability under P^L.
    pub p: f64,
}

/// log P(text · EOS | prompt), token by token (`strait score`).
#[derive(Serialize)]
pub struct Scored {
    /// The text scored.
    pub text: String,
    /// Its tokens (EOS not included).
    pub tokens: Vec<TokenId>,
    /// The sum of `token_logps`.
    pub logp: f64,
    /// Each token's log-probability, EOS last.
    pub token_logps: Vec<f64>,
}
