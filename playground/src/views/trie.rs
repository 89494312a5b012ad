//! The trie view: CARS / ARS / RSFT's p_u and ASAp's c̃, as the events build them.

use sampler_core::{Event, TokenId};
use std::collections::BTreeMap;

/// One trie node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrieNode {
    /// p_u (rejection samplers) or c̃(u) (ASAp), as last reported.
    pub mass: f64,
    /// How many continuations were pruned (proven non-viable).
    pub pruned_count: usize,
    /// The most likely pruned continuations with P(a|u), as the events list them.
    pub pruned: Vec<(TokenId, f64)>,
    /// Which event last changed it (index in the run), for highlighting.
    pub last_changed: usize,
}

/// One node laid out for drawing (depth-first, children in token order).
#[derive(Clone, Debug, PartialEq)]
pub struct TrieRow {
    /// The node's prefix.
    pub prefix: Vec<TokenId>,
    /// The text of its last token (empty for the root).
    pub label: String,
    /// Its depth (0 for the root).
    pub depth: usize,
    /// Index of its parent row, when the parent is a node.
    pub parent: Option<usize>,
    /// Its mass (p_u or c̃).
    pub mass: f64,
    /// How many continuations were pruned below it.
    pub pruned_count: usize,
    /// Whether its mass reached 0 (the whole subtree is pruned).
    pub dead: bool,
}

/// The trie as the events build it, and the acceptance rate after each sample.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrieView {
    /// Nodes by token prefix (the root is the empty prefix), in prefix order.
    pub nodes: BTreeMap<Vec<TokenId>, TrieNode>,
    /// The acceptance rate (valid samples / generations) after each valid sample: seed
    /// 002's monotone improvement made visible.
    pub acceptance: Vec<f64>,
    /// The root's mass p_ε (ASAp: c̃(ε)) after each finished sample: for the rejection
    /// samplers, the chance the next generation is accepted, once the trie holds it.
    pub p_eps: Vec<f64>,
    /// Valid samples so far.
    pub accepted: usize,
    /// Generations that ended without a valid sample.
    pub rejected: usize,
    /// The prefix the latest event touched.
    pub last_prefix: Option<Vec<TokenId>>,
    events: usize,
}

impl TrieView {
    /// Updates from one event.
    pub fn apply(&mut self, event: &Event) {
        self.events += 1;
        let at = self.events;
        match event {
            Event::TrieInsert { prefix, mass } => {
                let n = self.nodes.entry(prefix.clone()).or_default();
                n.mass = *mass;
                n.last_changed = at;
                self.last_prefix = Some(prefix.clone());
            }
            Event::TriePrune {
                prefix,
                count,
                removed,
                top,
            } => {
                let n = self.nodes.entry(prefix.clone()).or_insert(TrieNode {
                    mass: 1.0,
                    ..TrieNode::default()
                });
                n.mass = (n.mass - removed).max(0.0);
                n.pruned_count += count;
                n.pruned.extend_from_slice(top);
                n.pruned.sort_by(|a, b| b.1.total_cmp(&a.1));
                n.pruned.truncate(16);
                n.last_changed = at;
                self.last_prefix = Some(prefix.clone());
            }
            Event::TrieUpdate { prefix, mass, .. } => {
                let n = self.nodes.entry(prefix.clone()).or_default();
                n.mass = *mass;
                n.last_changed = at;
                self.last_prefix = Some(prefix.clone());
            }
            Event::EfgUpdate { prefix, efg } => {
                let n = self.nodes.entry(prefix.clone()).or_default();
                n.mass = *efg;
                n.last_changed = at;
                self.last_prefix = Some(prefix.clone());
            }
            Event::SampleFinished { valid, .. } => {
                if *valid {
                    self.accepted += 1;
                } else {
                    self.rejected += 1;
                }
                self.acceptance.push(self.rate());
                self.p_eps
                    .push(self.nodes.get(&Vec::new()).map_or(1.0, |n| n.mass));
            }
            Event::Rejected { .. } => self.rejected += 1,
            _ => {}
        }
    }

    /// Valid samples over generations so far (1 before any generation).
    pub fn rate(&self) -> f64 {
        let total = self.accepted + self.rejected;
        if total == 0 {
            1.0
        } else {
            self.accepted as f64 / total as f64
        }
    }

    /// The nodes flattened depth-first for an indented tree or an SVG; at most `limit`
    /// rows (a long run's trie can be large).
    pub fn layout(&self, labels: &super::Labels, limit: usize) -> Vec<TrieRow> {
        let mut rows: Vec<TrieRow> = Vec::new();
        // BTreeMap order on Vec<TokenId> is depth-first, parents before children.
        let mut stack: Vec<(usize, usize)> = Vec::new(); // (row, depth)
        for (prefix, node) in self.nodes.iter().take(limit) {
            while stack.last().is_some_and(|&(r, _)| {
                !prefix.starts_with(&rows[r].prefix) || rows[r].prefix.len() >= prefix.len()
            }) {
                stack.pop();
            }
            let parent = stack
                .last()
                .filter(|&&(r, _)| rows[r].prefix.len() + 1 == prefix.len())
                .map(|&(r, _)| r);
            rows.push(TrieRow {
                prefix: prefix.clone(),
                label: prefix.last().map(|&t| labels.label(t)).unwrap_or_default(),
                depth: prefix.len(),
                parent,
                mass: node.mass,
                pruned_count: node.pruned_count,
                dead: node.mass <= 0.0,
            });
            stack.push((rows.len() - 1, prefix.len()));
        }
        rows
    }

    /// The mass of a node, if the trie has it.
    pub fn mass(&self, prefix: &[TokenId]) -> Option<f64> {
        self.nodes.get(prefix).map(|n| n.mass)
    }

    /// The children of `prefix` that are nodes, with their last token.
    pub fn children<'a>(
        &'a self,
        prefix: &'a [TokenId],
    ) -> impl Iterator<Item = (TokenId, &'a TrieNode)> + 'a {
        self.nodes
            .range(prefix.to_vec()..)
            .take_while(move |(k, _)| k.starts_with(prefix))
            .filter(move |(k, _)| k.len() == prefix.len() + 1)
            .map(|(k, n)| (k[k.len() - 1], n))
    }
}
