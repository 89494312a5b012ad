//! Side-by-side timing of [`HmmEngine`]s on one problem, for `strait bench hmm` and the
//! `engines` example (native only: it reads the clock with `std::time::Instant`).

use sampler_core::hmm::{Hmm, HmmEngine};
use sampler_core::{TensorizedAutomaton, TokenId, block_on};
use std::time::Instant;

/// One engine's figures on one problem.
#[derive(Clone, Debug)]
pub struct EngineTiming {
    /// The engine's name.
    pub engine: String,
    /// Seconds for the EM iterations (the first call's set-up included).
    pub em_s: f64,
    /// Seconds for the guide's backward table.
    pub table_s: f64,
    /// Largest difference of any HMM parameter from the first engine's after the EM.
    pub max_param_diff: f64,
    /// Largest difference of any finite table entry from the first engine's, relative to
    /// max(1, |log C|); ∞ where one is −∞ and the other is not.
    pub max_table_diff: f64,
    /// Why the engine failed, if it did (the figures are then meaningless).
    pub error: Option<String>,
}

/// Runs `iterations` EM steps from `start` on `data` (pseudo-count 1e-3, P-GCD's default)
/// and then the guide table of `tensor` for `budget` tokens on each engine in turn; the
/// first engine that succeeds is the one the others are compared with.
pub fn time_engines(
    engines: &[&dyn HmmEngine],
    start: &Hmm,
    data: &[Vec<TokenId>],
    iterations: usize,
    tensor: &TensorizedAutomaton,
    budget: usize,
) -> Vec<EngineTiming> {
    let mut reference: Option<(Hmm, Vec<f64>)> = None;
    let mut rows = Vec::new();
    for engine in engines {
        let mut row = EngineTiming {
            engine: engine.name(),
            em_s: 0.0,
            table_s: 0.0,
            max_param_diff: 0.0,
            max_table_diff: 0.0,
            error: None,
        };
        let t = Instant::now();
        let mut hmm = start.clone();
        for _ in 0..iterations {
            match block_on(engine.em_step(&hmm, data, 1e-3)) {
                Ok((next, _)) => hmm = next,
                Err(e) => {
                    row.error = Some(e.to_string());
                    break;
                }
            }
        }
        row.em_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let table = match row.error {
            None => block_on(engine.guide_table(&hmm, tensor, budget)),
            Some(_) => Ok(Vec::new()),
        };
        row.table_s = t.elapsed().as_secs_f64();
        match table {
            Err(e) => row.error = Some(e.to_string()),
            Ok(table) if row.error.is_none() => {
                let (ref_hmm, ref_table) =
                    reference.get_or_insert_with(|| (hmm.clone(), table.clone()));
                row.max_param_diff = max_param_diff(ref_hmm, &hmm);
                row.max_table_diff = max_table_diff(ref_table, &table);
            }
            Ok(_) => {}
        }
        rows.push(row);
    }
    rows
}

/// The largest absolute difference of any parameter.
pub fn max_param_diff(x: &Hmm, y: &Hmm) -> f64 {
    let xs = x.initial.iter().chain(&x.transition).chain(&x.emission);
    let ys = y.initial.iter().chain(&y.transition).chain(&y.emission);
    xs.zip(ys)
        .map(|(p, q)| (p - q).abs())
        .fold(0.0, |m: f64, d| {
            if d.is_nan() || m.is_nan() {
                f64::NAN
            } else {
                m.max(d)
            }
        })
}

/// The largest difference of finite table entries relative to max(1, |x|); ∞ when one
/// table is −∞ where the other is not (or the lengths differ).
pub fn max_table_diff(x: &[f64], y: &[f64]) -> f64 {
    if x.len() != y.len() {
        return f64::INFINITY;
    }
    x.iter()
        .zip(y)
        .map(|(a, b)| match (a.is_finite(), b.is_finite()) {
            (true, true) => (a - b).abs() / a.abs().max(1.0),
            _ if a.is_nan() || b.is_nan() => f64::NAN,
            (false, false) => 0.0,
            _ => f64::INFINITY,
        })
        .fold(0.0, |m: f64, d| {
            if d.is_nan() || m.is_nan() {
                f64::NAN
            } else {
                m.max(d)
            }
        })
}
