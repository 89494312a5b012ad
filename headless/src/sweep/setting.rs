//! A setting of a sweep (a sampler with its parameters) with its seeds pooled: what the
//! summary's rows and the tables' cells are made of.

use super::cell::Cell;

/// One setting of one group (a sampler with its parameters), its seeds pooled.
#[derive(Clone, Debug)]
pub struct Setting {
    /// The group's first cell (seed aside, every cell of the setting is like it).
    pub cell: Cell,
    /// Finished seeds.
    pub seeds: usize,
    /// Output samples, all seeds.
    pub samples: usize,
    /// Valid samples, all seeds.
    pub valid: usize,
    /// Mean LM calls of a run.
    pub lm_calls: f64,
    /// Mean forward tokens of a run.
    pub forward_tokens: f64,
    /// Generations, all seeds.
    pub generations: u64,
    /// Seconds, all seeds.
    pub seconds: f64,
    /// KL(q̂ ‖ P^L) and TV, when the group has exact P^L.
    pub distance: Option<(f64, f64)>,
    /// KL(q̂ ‖ P) on the observed valid outputs (the module's doc), when there is one.
    pub kl_estimate: Option<f64>,
    /// The first error of a seed, if any.
    pub error: Option<String>,
}

impl Setting {
    /// Seconds per valid sample (∞ with none).
    pub fn seconds_per_valid(&self) -> f64 {
        self.seconds / self.valid as f64
    }

    /// Generations per 100 valid samples (the measure of seed 002's tables).
    pub fn generations_per_100_valid(&self) -> f64 {
        100.0 * self.generations as f64 / self.valid as f64
    }
}

/// A figure for a table: ∞, three significant digits, or a power of ten when tiny.
pub fn num(x: f64) -> String {
    if x.is_infinite() || x.is_nan() {
        "∞".into()
    } else if x == 0.0 {
        "0".into()
    } else if x.abs() < 1e-3 {
        format!("{x:.1e}")
    } else if x.abs() < 10.0 {
        format!("{x:.3}")
    } else if x.abs() < 1000.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}
