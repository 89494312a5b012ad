//! The results view: distinct outputs, their counts and log P, the empirical distribution,
//! the cost per valid sample and, when the exact target is known, KL against LM calls.
//!
//! SMC runs are combined by their evidence: run r's particles carry weights w̄_ri
//! normalized within the run, and the properly weighted ensemble over runs gives particle i
//! of run r the weight Ĝ_r·w̄_ri (Ĝ_r the run's estimate of P(L)). Averaging the normalized
//! ensembles instead is biased for small M: on the toy-random example with M = 8 and
//! resampling at τ = 0.99, P(c) comes out 0.43 that way against P^L(c) = 0.747 (0.741
//! weighted by Ĝ, 2,000 runs).

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
    /// Sum of its weights (its count for unweighted methods). When a run mixes exact
    /// samples and weighted SMC runs (`auto` after a handover), each exact sample counts as
    /// much as the mean SMC run: the share of a row is then
    /// (its exact count + R·its share of the pooled runs) / (exact samples + R).
    pub weight: f64,
    /// Of `count`, the unweighted (exact) samples.
    pub exact: u64,
    /// Its mass from weighted runs, w̄·Ĝ_r in the scale of the largest Ĝ.
    pub smc: f64,
    /// log P under the unconstrained model.
    pub logp: f64,
    /// Whether it satisfies the constraint.
    pub valid: bool,
    /// P^L when the exact distribution is known (0 outside the language).
    pub exact_p: Option<f64>,
}

/// One bar pair of the ground-truth chart: a sequence's empirical share beside its P^L.
#[derive(Clone, Debug, PartialEq)]
pub struct DistRow {
    /// The tokens.
    pub tokens: Vec<TokenId>,
    /// Their text.
    pub text: String,
    /// Share of the samples' weight (0 when never drawn).
    pub empirical: f64,
    /// P^L (0 outside the language).
    pub exact: f64,
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
    /// Sum of all weights (samples for unweighted methods; for SMC, Σ_r Ĝ_r relative to
    /// the largest Ĝ seen, which is the scale every SMC weight here is kept in).
    pub total_weight: f64,
    /// The latest counters a sample carried.
    pub counters: Counters,
    /// Acceptance rate (valid samples / attempts) after each sample.
    pub acceptance: Vec<f64>,
    /// KL(samples‖P^L) after each sample (each SMC run), once the exact target is set.
    pub kl: Vec<KlPoint>,
    /// log Ĝ of each SMC run.
    pub evidence: Vec<f64>,
    /// Unweighted samples so far and the weighted runs' mass (see [`OutputRow::weight`]).
    exact_total: u64,
    smc_total: f64,
    exact: Option<HashMap<Vec<TokenId>, f64>>,
    pending_weight: f64,
    /// log Ĝ of the SMC run whose particles are arriving.
    run_log_evidence: Option<f64>,
    /// The log scale of SMC weights: the largest log Ĝ so far.
    log_scale: f64,
}

impl ResultsView {
    /// Row `changed`'s weight (every row's, with `None`) and the total from the exact and
    /// weighted parts: an exact sample weighs as much as the mean weighted run (1 when
    /// there is none). Only a run that mixes both moves every row when one sample arrives.
    fn combine(&mut self, changed: Option<usize>) {
        let runs = self.evidence.len();
        let mixed = self.exact_total > 0 && runs > 0 && self.smc_total > 0.0;
        let unit = if mixed {
            self.smc_total / runs as f64
        } else {
            1.0
        };
        let rows = match changed {
            Some(i) if !mixed => i..i + 1,
            _ => 0..self.outputs.len(),
        };
        for o in &mut self.outputs[rows] {
            o.weight = o.exact as f64 * unit + o.smc;
        }
        self.total_weight = self.exact_total as f64 * unit + self.smc_total;
    }

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
            exact_total: 0,
            smc_total: 0.0,
            counters: Counters::default(),
            acceptance: Vec::new(),
            kl: Vec::new(),
            evidence: Vec::new(),
            exact: None,
            pending_weight: 0.0,
            run_log_evidence: None,
            log_scale: f64::NEG_INFINITY,
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

    /// Distinct outputs, most weight first (ties: most probable under the model first).
    pub fn sorted(&self) -> Vec<&OutputRow> {
        let mut rows: Vec<&OutputRow> = self.outputs.iter().collect();
        rows.sort_by(|a, b| {
            b.weight
                .total_cmp(&a.weight)
                .then(b.logp.total_cmp(&a.logp))
                .then(a.tokens.cmp(&b.tokens))
        });
        rows
    }

    /// The ground-truth chart: every sequence of the language (P^L order, drawn or not)
    /// with its empirical share, then the drawn outputs outside the language; at most
    /// `limit` rows.
    pub fn against(&self, exact: &ExactDistribution, limit: usize) -> Vec<DistRow> {
        let total = self.total_weight;
        let share = |w: f64| if total > 0.0 { w / total } else { 0.0 };
        let mut rows: Vec<DistRow> = exact
            .entries
            .iter()
            .map(|e| DistRow {
                text: self.labels.text(&e.tokens),
                empirical: self
                    .index
                    .get(&e.tokens)
                    .map_or(0.0, |&i| share(self.outputs[i].weight)),
                exact: e.p,
                tokens: e.tokens.clone(),
            })
            .collect();
        for o in self.sorted() {
            if exact.index_of(&o.tokens).is_none() && o.weight > 0.0 {
                rows.push(DistRow {
                    tokens: o.tokens.clone(),
                    text: o.text.clone(),
                    empirical: share(o.weight),
                    exact: 0.0,
                });
            }
        }
        rows.truncate(limit);
        rows
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
                // An SMC particle: w̄_ri · Ĝ_r, in the scale of the largest Ĝ so far.
                let mass = match (weight, self.run_log_evidence) {
                    (Some(_), Some(le)) if le > f64::NEG_INFINITY => {
                        w * (le - self.log_scale).exp()
                    }
                    (Some(_), Some(_)) => 0.0,
                    _ => w,
                };
                let i = match self.index.get(tokens) {
                    Some(&i) => i,
                    None => {
                        self.outputs.push(OutputRow {
                            tokens: tokens.clone(),
                            text: self.labels.text(tokens),
                            count: 0,
                            weight: 0.0,
                            exact: 0,
                            smc: 0.0,
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
                if weight.is_none() {
                    self.outputs[i].exact += 1;
                    self.exact_total += 1;
                } else {
                    self.outputs[i].smc += mass;
                    self.smc_total += mass;
                }
                self.combine(Some(i));
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
                let le = if log_evidence.is_nan() {
                    f64::NEG_INFINITY
                } else {
                    *log_evidence
                };
                self.run_log_evidence = Some(le);
                if le > self.log_scale {
                    // Rescale what is stored to the new, larger reference (before the first
                    // finite Ĝ every stored SMC weight is 0).
                    if self.log_scale > f64::NEG_INFINITY {
                        let f = (self.log_scale - le).exp();
                        self.outputs.iter_mut().for_each(|o| o.smc *= f);
                        self.smc_total *= f;
                    }
                    self.log_scale = le;
                }
                self.combine(None);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(tokens: &[TokenId], weight: Option<f64>) -> Event {
        Event::SampleFinished {
            tokens: tokens.to_vec(),
            logp: -1.0,
            valid: true,
            weight,
        }
    }

    /// `auto` after a handover: two exact samples of `a`, then two SMC runs (Ĝ 1 and 1/4)
    /// of `b` and `c`. Each exact sample weighs as much as the mean run (5/8 relative to
    /// the largest Ĝ), so `a` holds 2 of 4 samples' worth; the runs share the rest by
    /// their evidence, 4 : 1.
    #[test]
    fn exact_samples_and_weighted_runs_combine_as_samples_and_runs() {
        let mut r = ResultsView::new(Labels::new(9, |t| t.to_string()));
        r.apply(&finished(&[0, 9], None), None);
        r.apply(&finished(&[0, 9], None), None);
        assert_eq!((r.outputs[0].weight, r.total_weight), (2.0, 2.0));
        r.apply(
            &Event::Evidence {
                run: 0,
                log_evidence: 0.0,
            },
            None,
        );
        r.apply(&finished(&[1, 9], Some(1.0)), None);
        r.apply(
            &Event::Evidence {
                run: 1,
                log_evidence: 0.25f64.ln(),
            },
            None,
        );
        r.apply(&finished(&[2, 9], Some(1.0)), None);
        let share = |i: usize| r.outputs[i].weight / r.total_weight;
        assert!((share(0) - 0.5).abs() < 1e-12, "{}", share(0));
        assert!((share(1) - 0.4).abs() < 1e-12, "{}", share(1));
        assert!((share(2) - 0.1).abs() < 1e-12, "{}", share(2));
    }
}
