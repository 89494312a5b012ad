//! The SMC view: particles as rows growing token by token, weights, ESS, lineage, and
//! the run laid out as lanes across steps ([`SmcRunView::lanes`]).

use sampler_core::math::logsumexp;
use sampler_core::{Event, TokenId};

/// One particle.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParticleRow {
    /// Its tokens so far.
    pub tokens: Vec<TokenId>,
    /// Its log weight.
    pub log_weight: f64,
    /// Its weight normalized over the particles (the bar).
    pub weight: f64,
    /// Whether it drew a token at the latest step (false once finished or dead).
    pub active: bool,
    /// The particle it was copied from at the latest resampling.
    pub parent: Option<usize>,
}

/// One resampling: for each new particle, the old particle it copies.
#[derive(Clone, Debug, PartialEq)]
pub struct LineageStep {
    /// The step after which it resampled.
    pub step: usize,
    /// `ancestors[i]` is the parent of new particle `i`.
    pub ancestors: Vec<usize>,
    /// The ESS that triggered it.
    pub ess: f64,
}

/// One SMC run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SmcRunView {
    /// Which run.
    pub run: usize,
    /// The particles.
    pub rows: Vec<ParticleRow>,
    /// (step, ESS) after each extension.
    pub ess: Vec<(usize, f64)>,
    /// Every resampling, in order.
    pub lineage: Vec<LineageStep>,
    /// log Ĝ once the run ended.
    pub log_evidence: Option<f64>,
    /// Every extension in order, for the lanes drawing.
    pub steps: Vec<LaneStep>,
}

/// One extension of the particles, as the lanes drawing needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneStep {
    /// The sampler's step.
    pub step: usize,
    /// Each particle's new token (`None`: finished or dead, it drew nothing).
    pub tokens: Vec<Option<TokenId>>,
    /// The normalized weights after the step.
    pub weights: Vec<f64>,
    /// When the particles were resampled after this step: the parent of each new particle.
    pub resampled: Option<Vec<usize>>,
}

/// An SMC run drawn as lanes: one column per step, one lane (row) per particle, each cell
/// the token a particle drew and its weight; links join a particle to what it became at
/// the next step, crossing lanes where resampling copied a parent into another lane.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lanes {
    /// The particles (lanes).
    pub lanes: usize,
    /// Columns, oldest first (the latest `max_columns` steps).
    pub columns: Vec<LaneColumn>,
    /// Links between consecutive columns; a resampling after the last column links into
    /// column `columns.len()`, the next step's place.
    pub links: Vec<LaneLink>,
    /// Earlier steps left out of the drawing.
    pub hidden: usize,
}

/// One step's column.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneColumn {
    /// The sampler's step.
    pub step: usize,
    /// One cell per lane: `(token drawn, normalized weight)`.
    pub cells: Vec<(Option<TokenId>, f64)>,
}

/// A link from `(column, from_lane)` to `(column + 1, to_lane)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaneLink {
    /// The column it leaves.
    pub column: usize,
    /// The lane it leaves (the parent).
    pub from_lane: usize,
    /// The lane it reaches (the copy, or the same particle).
    pub to_lane: usize,
    /// Whether resampling made it (else the particle simply continues).
    pub resampled: bool,
}

impl SmcRunView {
    /// The run as lanes, the latest `max_columns` steps.
    pub fn lanes(&self, max_columns: usize) -> Lanes {
        let m = self.rows.len();
        let hidden = self.steps.len().saturating_sub(max_columns);
        let shown = &self.steps[hidden..];
        let columns: Vec<LaneColumn> = shown
            .iter()
            .map(|s| LaneColumn {
                step: s.step,
                cells: (0..m)
                    .map(|i| {
                        let t = s.tokens.get(i).copied().flatten();
                        (t, s.weights.get(i).copied().unwrap_or(0.0))
                    })
                    .collect(),
            })
            .collect();
        let mut links = Vec::new();
        for (c, s) in shown.iter().enumerate() {
            let last = c + 1 == shown.len();
            match &s.resampled {
                Some(ancestors) => {
                    links.extend(ancestors.iter().enumerate().map(|(to, &from)| LaneLink {
                        column: c,
                        from_lane: from,
                        to_lane: to,
                        resampled: true,
                    }));
                }
                None if !last => links.extend((0..m).map(|i| LaneLink {
                    column: c,
                    from_lane: i,
                    to_lane: i,
                    resampled: false,
                })),
                None => {}
            }
        }
        Lanes {
            lanes: m,
            columns,
            links,
            hidden,
        }
    }
}

/// The SMC runs so far; the last is the one running.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SmcView {
    /// Runs in order (each keeps its final particles, ESS trace and lineage); at most
    /// [`super::MAX_KEPT`], the latest.
    pub runs: Vec<SmcRunView>,
    /// Older runs dropped to keep memory bounded.
    pub dropped: usize,
}

fn normalized(log_w: &[f64]) -> Vec<f64> {
    let z = logsumexp(log_w.iter().copied());
    if z == f64::NEG_INFINITY || z.is_nan() {
        return vec![0.0; log_w.len()];
    }
    log_w.iter().map(|l| (l - z).exp()).collect()
}

impl SmcView {
    /// The run in progress (or the last one).
    pub fn current(&self) -> Option<&SmcRunView> {
        self.runs.last()
    }

    fn run_mut(&mut self, run: usize, m: usize) -> &mut SmcRunView {
        if self
            .runs
            .last()
            .is_none_or(|r| r.run != run || r.log_evidence.is_some())
        {
            if self.runs.len() >= super::MAX_KEPT {
                self.runs.remove(0);
                self.dropped += 1;
            }
            self.runs.push(SmcRunView {
                run,
                rows: vec![ParticleRow::default(); m],
                ..SmcRunView::default()
            });
        }
        let r = self.runs.last_mut().expect("pushed above");
        if r.rows.len() < m {
            r.rows.resize(m, ParticleRow::default());
        }
        r
    }

    /// Updates from one event.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::ParticlesExtended {
                run,
                step,
                tokens,
                log_weights,
                ess,
            } => {
                let r = self.run_mut(*run, tokens.len());
                let w = normalized(log_weights);
                for (i, row) in r.rows.iter_mut().enumerate() {
                    let t = tokens.get(i).copied().flatten();
                    if let Some(t) = t {
                        row.tokens.push(t);
                    }
                    row.active = t.is_some();
                    row.log_weight = log_weights.get(i).copied().unwrap_or(f64::NEG_INFINITY);
                    row.weight = w.get(i).copied().unwrap_or(0.0);
                }
                r.ess.push((*step, *ess));
                r.steps.push(LaneStep {
                    step: *step,
                    tokens: tokens.clone(),
                    weights: w,
                    resampled: None,
                });
            }
            Event::Resampled {
                run,
                step,
                ancestors,
                ess,
            } => {
                let r = self.run_mut(*run, ancestors.len());
                let old = std::mem::take(&mut r.rows);
                let n = ancestors.len() as f64;
                r.rows = ancestors
                    .iter()
                    .map(|&a| {
                        let mut row = old.get(a).cloned().unwrap_or_default();
                        row.parent = Some(a);
                        row.weight = 1.0 / n;
                        row
                    })
                    .collect();
                // Equal weights after resampling: the mean of the old ones.
                let mean = logsumexp(old.iter().map(|r| r.log_weight)) - n.ln();
                r.rows.iter_mut().for_each(|row| row.log_weight = mean);
                if let Some(last) = r.steps.last_mut() {
                    last.resampled = Some(ancestors.clone());
                }
                r.lineage.push(LineageStep {
                    step: *step,
                    ancestors: ancestors.clone(),
                    ess: *ess,
                });
            }
            Event::Evidence { run, log_evidence } => {
                if let Some(r) = self.runs.last_mut()
                    && r.run == *run
                {
                    r.log_evidence = Some(*log_evidence);
                }
            }
            _ => {}
        }
    }
}
