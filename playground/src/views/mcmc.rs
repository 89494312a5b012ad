//! The MCMC view: each chain's state, proposals and history.

use sampler_core::exact::ExactDistribution;
use sampler_core::{Event, TokenId};
use std::collections::HashMap;

/// One GCD generation of a chain: the initial sample or a proposal.
#[derive(Clone, Debug, PartialEq)]
pub struct McmcStep {
    /// 0 for the initial sample, then the proposal's step.
    pub step: usize,
    /// Tokens of the state kept before regenerating (0 for the initial sample).
    pub cut: usize,
    /// The regenerated tokens (the whole sample for step 0).
    pub suffix: Vec<TokenId>,
    /// The proposed sequence (state[..cut] ++ suffix).
    pub proposal: Vec<TokenId>,
    /// log acceptance ratio (0 for the initial sample).
    pub log_ratio: f64,
    /// min(1, ratio).
    pub accept_prob: f64,
    /// Whether the chain moved (true for the initial sample).
    pub accepted: bool,
}

/// One chain.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChainView {
    /// Which chain.
    pub chain: usize,
    /// Its current state.
    pub current: Vec<TokenId>,
    /// One entry per GCD generation: the initial sample, then each proposal.
    pub history: Vec<McmcStep>,
    /// Whether the chain has finished (its state was output).
    pub finished: bool,
}

/// A chain's walk over its states, for drawing: each distinct sequence it visited or was
/// proposed gets a row (in order of first appearance), and each step says where the chain
/// was after it and where the proposal pointed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Walk {
    /// The distinct sequences, one row each.
    pub states: Vec<Vec<TokenId>>,
    /// Per step: the row of the chain's state after the step.
    pub path: Vec<usize>,
    /// Per step: the row of the proposal and whether it was accepted.
    pub proposals: Vec<(usize, bool)>,
    /// Per step from the first proposal on: accepted proposals so far over proposals.
    pub acceptance: Vec<f64>,
}

impl ChainView {
    /// The chain's walk (see [`Walk`]).
    pub fn walk(&self) -> Walk {
        let mut w = Walk::default();
        let row = |w: &mut Walk, s: &[TokenId]| match w.states.iter().position(|x| x == s) {
            Some(i) => i,
            None => {
                w.states.push(s.to_vec());
                w.states.len() - 1
            }
        };
        let (mut at, mut accepted) = (None, 0usize);
        for (k, s) in self.history.iter().enumerate() {
            let p = row(&mut w, &s.proposal);
            if s.accepted || at.is_none() {
                at = Some(p);
            }
            w.path.push(at.unwrap_or(p));
            w.proposals.push((p, s.accepted));
            if k > 0 {
                accepted += usize::from(s.accepted);
                w.acceptance.push(accepted as f64 / k as f64);
            }
        }
        w
    }

    /// The chain's state after each step (the initial sample at step 0).
    pub fn states(&self) -> Vec<&[TokenId]> {
        let mut out: Vec<&[TokenId]> = Vec::with_capacity(self.history.len());
        for s in &self.history {
            let now = match out.last() {
                Some(prev) if !s.accepted => prev,
                _ => s.proposal.as_slice(),
            };
            out.push(now);
        }
        out
    }

    /// Accepted proposals over proposals (the initial sample not counted).
    pub fn acceptance_rate(&self) -> Option<f64> {
        let proposals = self.history.len().saturating_sub(1);
        (proposals > 0).then(|| {
            self.history[1..].iter().filter(|s| s.accepted).count() as f64 / proposals as f64
        })
    }
}

/// Every chain of the run; the last one is the one running.
#[derive(Clone, Debug, PartialEq)]
pub struct McmcView {
    /// Whether the view follows events (off for methods that are not MCMC, so their many
    /// samples do not pile up as chains).
    pub enabled: bool,
    /// Chains in order (at most [`super::MAX_KEPT`], the latest).
    pub chains: Vec<ChainView>,
    /// Older chains dropped to keep memory bounded.
    pub dropped: usize,
    eos: TokenId,
    /// The generation being drawn (from `Token` events).
    building: Vec<TokenId>,
    /// Whether `building` is still the chain's initial sample.
    initial_open: bool,
}

/// One point of [`McmcView::tv_by_step`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TvPoint {
    /// The step (0: the chains' initial GCD samples).
    pub step: usize,
    /// TV between the chains' states at this step and P^L.
    pub tv: f64,
    /// How many chains had reached the step.
    pub chains: usize,
}

impl McmcView {
    /// How far the chains' states after `k` steps are from P^L, for each k: the law of a
    /// Metropolis-Hastings chain at step k converges to its target as k grows, starting
    /// from the masking distortion of its initial GCD sample (k = 0). With few chains
    /// the empirical TV keeps a sampling floor of its own.
    pub fn tv_by_step(&self, exact: &ExactDistribution) -> Vec<TvPoint> {
        let states: Vec<Vec<&[TokenId]>> = self.chains.iter().map(ChainView::states).collect();
        let longest = states.iter().map(Vec::len).max().unwrap_or(0);
        (0..longest)
            .map(|k| {
                let mut empirical: HashMap<Vec<TokenId>, f64> = HashMap::new();
                let mut chains = 0;
                for s in states.iter().filter_map(|s| s.get(k)) {
                    *empirical.entry(s.to_vec()).or_default() += 1.0;
                    chains += 1;
                }
                empirical.values_mut().for_each(|v| *v /= chains as f64);
                TvPoint {
                    step: k,
                    tv: crate::exact::tv(&empirical, exact),
                    chains,
                }
            })
            .collect()
    }

    /// An empty view; `eos` ends the initial sample.
    pub fn new(eos: TokenId) -> Self {
        McmcView {
            enabled: true,
            chains: Vec::new(),
            dropped: 0,
            eos,
            building: Vec::new(),
            initial_open: false,
        }
    }

    /// The chain running now.
    pub fn current(&self) -> Option<&ChainView> {
        self.chains.last()
    }

    fn open_chain(&mut self) -> &mut ChainView {
        if self.chains.last().is_none_or(|c| c.finished) {
            let chain = self.chains.len() + self.dropped;
            if self.chains.len() >= super::MAX_KEPT {
                self.chains.remove(0);
                self.dropped += 1;
            }
            self.chains.push(ChainView {
                chain,
                ..ChainView::default()
            });
            self.building.clear();
            self.initial_open = true;
        }
        self.chains.last_mut().expect("pushed above")
    }

    /// Closes the initial sample: it becomes the chain's state and first history entry.
    fn close_initial(&mut self) {
        if !self.initial_open {
            return;
        }
        self.initial_open = false;
        let tokens = std::mem::take(&mut self.building);
        let c = self.chains.last_mut().expect("open chain");
        c.current = tokens.clone();
        c.history.push(McmcStep {
            step: 0,
            cut: 0,
            suffix: tokens.clone(),
            proposal: tokens,
            log_ratio: 0.0,
            accept_prob: 1.0,
            accepted: true,
        });
    }

    /// Updates from one event.
    pub fn apply(&mut self, event: &Event) {
        if !self.enabled {
            return;
        }
        match event {
            Event::Token {
                particle: 0,
                position,
                token,
                ..
            } => {
                self.open_chain();
                if self.initial_open {
                    if *position != self.building.len() {
                        // A new generation began: the initial sample ended without EOS.
                        self.close_initial();
                        return;
                    }
                    self.building.push(*token);
                    if *token == self.eos {
                        self.close_initial();
                    }
                }
            }
            Event::McmcProposal {
                chain,
                step,
                cut,
                suffix,
                log_ratio,
                accept_prob,
                accepted,
            } => {
                self.open_chain();
                self.close_initial();
                let c = self.chains.last_mut().expect("open chain");
                c.chain = *chain;
                let mut proposal = c.current[..(*cut).min(c.current.len())].to_vec();
                proposal.extend_from_slice(suffix);
                if *accepted {
                    c.current = proposal.clone();
                }
                c.history.push(McmcStep {
                    step: *step,
                    cut: *cut,
                    suffix: suffix.clone(),
                    proposal,
                    log_ratio: *log_ratio,
                    accept_prob: *accept_prob,
                    accepted: *accepted,
                });
            }
            Event::SampleFinished { tokens, .. } => {
                if let Some(c) = self.chains.last_mut()
                    && !c.finished
                {
                    if self.initial_open {
                        self.initial_open = false;
                        self.building.clear();
                        c.current = tokens.clone();
                        c.history.push(McmcStep {
                            step: 0,
                            cut: 0,
                            suffix: tokens.clone(),
                            proposal: tokens.clone(),
                            log_ratio: 0.0,
                            accept_prob: 1.0,
                            accepted: true,
                        });
                    }
                    c.finished = true;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(step: usize, proposal: &[TokenId], accepted: bool) -> McmcStep {
        McmcStep {
            step,
            cut: 0,
            suffix: proposal.to_vec(),
            proposal: proposal.to_vec(),
            log_ratio: 0.0,
            accept_prob: if accepted { 1.0 } else { 0.0 },
            accepted,
        }
    }

    /// The chain moves only on accepted proposals; a rejected proposal gets its row but
    /// the path stays; the acceptance rate runs over proposals only.
    #[test]
    fn the_walk_moves_on_accepted_proposals_only() {
        let c = ChainView {
            history: vec![
                step(0, &[1, 2], true),
                step(1, &[3], false),
                step(2, &[1, 4], true),
                step(3, &[1, 2], true),
            ],
            ..ChainView::default()
        };
        let w = c.walk();
        assert_eq!(w.states, vec![vec![1, 2], vec![3], vec![1, 4]]);
        assert_eq!(w.path, vec![0, 0, 2, 0]);
        assert_eq!(
            w.proposals,
            vec![(0, true), (1, false), (2, true), (0, true)]
        );
        assert_eq!(w.acceptance, vec![0.0, 0.5, 2.0 / 3.0]);
        assert_eq!(
            c.states(),
            vec![&[1, 2][..], &[1, 2][..], &[1, 4][..], &[1, 2][..]]
        );
    }
}
