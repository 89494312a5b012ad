//! View models for the page, driven only by the sampler's [`Event`] stream: the page
//! renders them; they know nothing of the DOM.
//!
//! # Key types
//! - [`Views`]: all sub-views; [`Views::apply`] feeds one event to each.
//! - [`TokenView`]: the top next tokens at the latest step, masked ones flagged, Z, the draw.
//! - [`TrieView`]: the rejection samplers' trie of p_u (or ASAp's c̃), pruned branches,
//!   acceptance rate and p_ε per sample; [`TrieDrawing`] lays it out as a tree.
//! - [`McmcView`]: the chain's state, each proposal's cut, suffix, ratio and verdict.
//! - [`SmcView`]: particles as rows, normalized weights, ESS, resampling lineage.
//! - [`HmmView`]: P-GCD's HMM distillation (EM iterations, log-likelihood).
//! - [`ResultsView`]: distinct outputs with counts and log P, the empirical distribution,
//!   running acceptance rate, LM calls per valid sample, KL(samples‖P^L) against calls.

mod hmm;
mod labels;
mod mcmc;
mod results;
mod smc;
mod token;
mod trie;
mod trie_drawing;

pub use hmm::HmmView;
pub use labels::Labels;
pub use mcmc::{ChainView, McmcStep, McmcView, TvPoint, Walk};
pub use results::{DistRow, KlPoint, OutputRow, ResultsView};
pub use smc::{
    LaneColumn, LaneLink, LaneStep, Lanes, LineageStep, ParticleRow, SmcRunView, SmcView,
};
pub use token::{GuideToken, GuideView, TokenView, TopToken};
pub use trie::{TrieNode, TrieRow, TrieView};
pub use trie_drawing::{DrawnNode, TrieDrawing};

use crate::runner::RecordedEvent;

/// Most MCMC chains and SMC runs a view keeps (the oldest are dropped and counted), so a
/// run of thousands of chains or runs stays small in memory.
pub const MAX_KEPT: usize = 64;
use sampler_core::Event;

/// Every view of one run.
#[derive(Clone, Debug)]
pub struct Views {
    /// How tokens are shown.
    pub labels: Labels,
    /// The token view.
    pub token: TokenView,
    /// The trie view (rejection samplers, ASAp).
    pub trie: TrieView,
    /// The MCMC view.
    pub mcmc: McmcView,
    /// The SMC view.
    pub smc: SmcView,
    /// P-GCD's HMM distillation.
    pub hmm: HmmView,
    /// The results view.
    pub results: ResultsView,
    /// The latest word on how much of the model's mass the constraint keeps (`auto`'s
    /// choice, or advice that an exact sampler may not finish), as the run said it.
    pub estimate: Option<String>,
    /// Events applied so far.
    pub applied: usize,
}

impl Views {
    /// Empty views that show tokens with `labels`.
    pub fn new(labels: Labels) -> Self {
        Views {
            token: TokenView::default(),
            trie: TrieView::default(),
            mcmc: McmcView::new(labels.eos()),
            smc: SmcView::default(),
            hmm: HmmView::default(),
            results: ResultsView::new(labels.clone()),
            labels,
            estimate: None,
            applied: 0,
        }
    }

    /// Empty views for a run of `method` (the MCMC view only follows MCMC methods).
    pub fn for_method(labels: Labels, method: sampler_core::samplers::Method) -> Self {
        let mut v = Views::new(labels);
        v.mcmc.enabled = method.is_mcmc();
        v
    }

    /// Feeds one event to every view.
    pub fn apply(&mut self, event: &Event) {
        self.token.apply(event, &self.labels);
        self.trie.apply(event);
        self.mcmc.apply(event);
        self.smc.apply(event);
        self.hmm.apply(event);
        self.results.apply(event, None);
        self.note_estimate(event);
        self.applied += 1;
    }

    /// Keeps the message of an [`Event::Estimate`].
    fn note_estimate(&mut self, event: &Event) {
        if let Event::Estimate { message, .. } = event {
            self.estimate = Some(message.clone());
        }
    }

    /// Feeds a recorded event (with the counters its sample carried) to every view.
    pub fn apply_recorded(&mut self, recorded: &RecordedEvent) {
        self.token.apply(&recorded.event, &self.labels);
        self.trie.apply(&recorded.event);
        self.mcmc.apply(&recorded.event);
        self.smc.apply(&recorded.event);
        self.hmm.apply(&recorded.event);
        self.results.apply(&recorded.event, recorded.counters);
        self.note_estimate(&recorded.event);
        self.applied += 1;
    }
}
