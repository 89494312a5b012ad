//! The results view: distinct outputs, their counts and log P, the empirical distribution,
//! the cost per valid sample and, when the exact target is known, KL against LM calls.

use super::Labels;
use sampler_core::exact::ExactDistribution;
use sampler_core::samplers::Counters;
use sampler_core::{Event, TokenId};
use std::collections::HashMap;

/// One distinct output.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputRow {
    /// Its tokens (EOS included when it ended).
    pub tokens: Vec<TokenId>,
    /// Its text.
    pub text: String,
    /// How many times it was output.
    pub count: u64,
    /// Sum of its weights (its count for unweighted methods).
    pub weight: f64,
    /// log P under the unconstrained model.
    pub logp: f64,
    /// Whether it satisfies the constraint.
    pub valid: bool,
    /// P^L when the exact distribution is known (0 outside the language).
    pub exact_p: Option<f64>,
}

/// One point of the KL(samples‖P^L) curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KlPoint {
    /// LM calls so far.
    pub lm_calls: u64,
    /// Samples so far.
    pub samples: u64,
    /// KL of the empirical distribution from P^L, nats (+∞ with mass outside L).
    pub kl: f64,
}

/// Everything the run produced so far.
#[derive(Clone, Debug)]
pub struct ResultsView {
    labels: Labels,
    /// Distinct outputs, in order of first appearance.
    pub outputs: Vec<OutputRow>,
    index: HashMap<Vec<TokenId>, usize>,
    /// Samples output.
    pub samples: u64,
    /// Valid samples output.
    pub valid: u64,
    /// Generations that ended without a sample (rejection samplers, ASAp dead ends).
    pub rejected: u64,
    /// Sum of all weights (samples for unweighted methods, runs for SMC).
    pub total_weight: f64,
    /// The latest counters a sample carried.
    pub counters: Counters,
    /// Acceptance rate (valid samples / attempts) after each sample.
    pub acceptance: Vec<f64>,
    /// KL(samples‖P^L) after each sample (each SMC run), once the exact target is set.
    pub kl: Vec<KlPoint>,
    /// log Ĝ of each SMC run.
    pub evidence: Vec<f64>,
    exact: Option<HashMap<Vec<TokenId>, f64>>,
    pending_weight: f64,
}

impl ResultsView {
    /// An empty view.
    pub fn new(labels: Labels) -> Self {
        ResultsView {
            labels,
            outputs: Vec::new(),
            index: HashMap::new(),
            samples: 0,
            valid: 0,
            rejected: 0,
            total_weight: 0.0,
            counters: Counters::default(),
            acceptance: Vec::new(),
            kl: Vec::new(),
            evidence: Vec::new(),
            exact: None,
            pending_weight: 0.0,
        }
    }

    /// Sets the exact target P^L (shown beside each output; enables the KL curve).
    pub fn set_exact(&mut self, exact: &ExactDistribution) {
        let map: HashMap<Vec<TokenId>, f64> = exact
            .entries
            .iter()
            .map(|e| (e.tokens.clone(), e.p))
            .collect();
        for row in &mut self.outputs {
            row.exact_p = Some(map.get(&row.tokens).copied().unwrap_or(0.0));
        }
        self.exact = Some(map);
    }

    /// Valid samples over attempts (samples plus rejected generations).
    pub fn acceptance_rate(&self) -> Option<f64> {
        let attempts = self.samples + self.rejected;
        (attempts > 0).then(|| self.valid as f64 / attempts as f64)
    }

    /// LM calls per valid sample so far.
    pub fn lm_calls_per_valid(&self) -> Option<f64> {
        (self.valid > 0).then(|| self.counters.lm_calls as f64 / self.valid as f64)
    }

    /// The empirical distribution: each output's share of the total weight.
    pub fn empirical(&self) -> HashMap<Vec<TokenId>, f64> {
        let total = self.total_weight;
        self.outputs
            .iter()
            .filter(|r| r.weight > 0.0)
            .map(|r| {
                (
                    r.tokens.clone(),
                    if total > 0.0 { r.weight / total } else { 0.0 },
                )
            })
            .collect()
    }

    /// KL(empirical ‖ P^L) now, if the exact target is set.
    pub fn kl_now(&self) -> Option<f64> {
        let exact = self.exact.as_ref()?;
        if self.total_weight <= 0.0 {
            return None;
        }
        let mut kl = 0.0;
        for r in &self.outputs {
            let q = r.weight / self.total_weight;
            if q <= 0.0 {
                continue;
            }
            let p = exact.get(&r.tokens).copied().unwrap_or(0.0);
            if p <= 0.0 {
                return Some(f64::INFINITY);
            }
            kl += q * (q / p).ln();
        }
        Some(kl.max(0.0))
    }

    /// Updates from one event; `counters` are those its sample carried, when known.
    pub fn apply(&mut self, event: &Event, counters: Option<Counters>) {
        match event {
            Event::SampleFinished {
                tokens,
                logp,
                valid,
                weight,
            } => {
                if let Some(c) = counters {
                    self.counters = c;
                }
                self.samples += 1;
                if *valid {
                    self.valid += 1;
                }
                let w = weight.unwrap_or(1.0);
                let w = if w.is_finite() && w >= 0.0 { w } else { 0.0 };
                let i = match self.index.get(tokens) {
                    Some(&i) => i,
                    None => {
                        self.outputs.push(OutputRow {
                            tokens: tokens.clone(),
                            text: self.labels.text(tokens),
                            count: 0,
                            weight: 0.0,
                            logp: *logp,
                            valid: *valid,
                            exact_p: self
                                .exact
                                .as_ref()
                                .map(|m| m.get(tokens).copied().unwrap_or(0.0)),
                        });
                        self.index.insert(tokens.clone(), self.outputs.len() - 1);
                        self.outputs.len() - 1
                    }
                };
                self.outputs[i].count += 1;
                self.outputs[i].weight += w;
                self.total_weight += w;
                self.acceptance.push(self.acceptance_rate().unwrap_or(0.0));
                // Weighted samples (SMC) arrive a run at a time, normalized within the run:
                // a KL point once the run's weights are all in.
                let complete = match weight {
                    None => true,
                    Some(_) => {
                        self.pending_weight += w;
                        if self.pending_weight >= 1.0 - 1e-9 {
                            self.pending_weight = 0.0;
                            true
                        } else {
                            false
                        }
                    }
                };
                if complete && let Some(kl) = self.kl_now() {
                    self.kl.push(KlPoint {
                        lm_calls: self.counters.lm_calls,
                        samples: self.samples,
                        kl,
                    });
                }
            }
            Event::Rejected { .. } => self.rejected += 1,
            Event::Evidence { log_evidence, .. } => {
                self.evidence.push(*log_evidence);
                self.pending_weight = 0.0;
            }
            _ => {}
        }
    }
}
