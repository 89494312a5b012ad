//! The trie of invalid prefixes W and masses p_u (seed 002 §3), shared by `rs`,
//! `sample-verify`, `ars`, `rsft`, `cars` and, holding c̃ instead of p, by `asap`.
//!
//! Every node is a token prefix u that has been visited. It stores p_u = Σ_a P(a|u)·p_ua,
//! where p_ua is 0 for a pruned (invalid) continuation, the child's own mass for a child
//! node and 1 off the trie. Pruned continuations are one bit each (a [`TokenSet`]), so a
//! node of a 150k-token model costs about 19 KB, not a node per token.
//!
//! Masses keep their relative precision at any scale, as CARS needs on rare constraints
//! (valid strings of probability 1e-30 and below): p_u is never stored as 1 − (mass
//! removed), which cancels to 0 below about 1e-16. Instead a node keeps `off`, the mass
//! Σ P(a|u) of its continuations that are neither pruned nor children, and p_u is
//! recomputed as `off + Σ_children P(c|u)·p_c` whenever a continuation is pruned or a
//! child's mass changes (the change travels up to the root). `off` loses a continuation's
//! P(a|u) by subtraction only while that keeps at least half of it; past that it is summed
//! afresh over the remaining continuations from P(·|u) (every node whose probabilities
//! are cached: the root always, others while the cache has room), so a subtraction never
//! cancels more than one bit.
//!
//! Exact zeros: each node also counts its *live* continuations (P(a|u) > 0 and not pruned);
//! when none is left its mass is exactly 0 and it is pruned from its parent, so "the
//! constraint has probability zero" is detected without rounding.

use crate::{Event, EventSink, TokenId, TokenSet};
use std::collections::HashMap;
use std::rc::Rc;

/// Σ of the positive entries (the mass of the continuations a model allows).
fn positive_sum(probs: &[f64]) -> f64 {
    probs.iter().filter(|&&p| p > 0.0).sum()
}

/// Index of a node in a [`Trie`].
pub type NodeId = usize;

/// Most probabilities (floats) the trie caches across all nodes (32 MB).
const CACHE_FLOATS: usize = 1 << 22;

/// The root's id.
pub const ROOT: NodeId = 0;

#[derive(Clone, Debug)]
struct Node {
    parent: Option<NodeId>,
    token: TokenId,
    /// P(token | parent prefix).
    edge_p: f64,
    /// p_u (or c̃(u) for ASAp).
    p: f64,
    /// Σ P(a|u) over the continuations that are neither pruned nor children.
    off: f64,
    /// Continuations with P(a|u) > 0 that are not pruned.
    live: usize,
    /// Pruned continuations (p_ua = 0).
    dead: TokenSet,
    children: HashMap<TokenId, NodeId>,
    /// P(·|u), when the cache had room.
    probs: Option<Rc<[f64]>>,
    /// Every non-viable continuation of u is already pruned (CARS, RSFT at the root, ASAp).
    expanded: bool,
}

/// The trie of seed 002 §3 (see the module docs); persists across the samples of a run.
#[derive(Clone, Debug)]
pub struct Trie {
    nodes: Vec<Node>,
    vocab_size: usize,
    has_root: bool,
    frozen: bool,
    /// Test-only mutant switch: `false` never propagates mass changes upward.
    #[cfg(test)]
    propagate: bool,
    cached: usize,
    top_k: usize,
}

impl Trie {
    /// An empty trie (W = ∅, p_u = 1 everywhere) over a vocabulary of `vocab_size` tokens.
    pub fn new(vocab_size: usize) -> Self {
        Trie {
            nodes: Vec::new(),
            vocab_size,
            has_root: false,
            frozen: false,
            #[cfg(test)]
            propagate: true,
            cached: 0,
            top_k: 5,
        }
    }

    /// A deliberately wrong trie that never propagates mass changes upward: it exists only
    /// so tests can show that the exactness checks catch such a bug.
    #[cfg(test)]
    pub(crate) fn without_propagation(vocab_size: usize) -> Self {
        Trie {
            propagate: false,
            ..Trie::new(vocab_size)
        }
    }

    /// How many pruned tokens each `TriePrune` event lists.
    pub fn set_event_top_k(&mut self, k: usize) {
        self.top_k = k;
    }

    /// Stops every future update (seed 002 App. E.3): sampling continues, exactly, from the
    /// frozen R^W, and memory stays bounded.
    pub fn freeze(&mut self) {
        self.frozen = true;
    }

    /// Whether [`Trie::freeze`] was called.
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Number of nodes (pruned leaves are bits, not nodes).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the trie has no node yet.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// p_ε: the mass of every sequence that avoids W (1 before the root exists).
    pub fn p_root(&self) -> f64 {
        if self.has_root {
            self.nodes[ROOT].p
        } else {
            1.0
        }
    }

    /// Whether the root is known to have no live continuation (the constraint has
    /// probability zero under the model).
    pub fn root_is_dead(&self) -> bool {
        self.has_root && self.nodes[ROOT].live == 0
    }

    /// Creates the root from P(·|ε) if it does not exist; the root always caches its
    /// probabilities. Returns [`ROOT`].
    pub fn ensure_root(&mut self, probs: &[f64], sink: &mut dyn EventSink) -> NodeId {
        if !self.has_root {
            self.has_root = true;
            self.cached += probs.len();
            self.nodes.push(Node {
                parent: None,
                token: 0,
                edge_p: 1.0,
                p: 1.0,
                off: positive_sum(probs),
                live: probs.iter().filter(|&&x| x > 0.0).count(),
                dead: TokenSet::empty(self.vocab_size),
                children: HashMap::new(),
                probs: Some(probs.into()),
                expanded: false,
            });
            sink.emit(Event::TrieInsert {
                prefix: Vec::new(),
                mass: 1.0,
            });
        }
        ROOT
    }

    /// The child `parent·token` (created with mass 1 if absent), given P(token|parent) and
    /// the child's own next-token probabilities (cached if there is room).
    pub fn ensure_child(
        &mut self,
        parent: NodeId,
        token: TokenId,
        edge_p: f64,
        probs: &[f64],
        sink: &mut dyn EventSink,
    ) -> NodeId {
        let positive = probs.iter().filter(|&&x| x > 0.0).count();
        self.ensure_child_with(parent, token, edge_p, positive, Some(probs), sink)
    }

    /// [`Trie::ensure_child`] when only the number of continuations with P(a|u) > 0 is at
    /// hand (`probs`, if given, is cached when there is room).
    pub fn ensure_child_with(
        &mut self,
        parent: NodeId,
        token: TokenId,
        edge_p: f64,
        positive: usize,
        probs: Option<&[f64]>,
        sink: &mut dyn EventSink,
    ) -> NodeId {
        if let Some(&c) = self.nodes[parent].children.get(&token) {
            return c;
        }
        let id = self.nodes.len();
        let off = probs.map_or(1.0, positive_sum);
        let probs = probs.filter(|p| self.cached + p.len() <= CACHE_FLOATS);
        if let Some(p) = probs {
            self.cached += p.len();
        }
        self.nodes.push(Node {
            parent: Some(parent),
            token,
            edge_p,
            p: 1.0,
            off,
            live: positive,
            dead: TokenSet::empty(self.vocab_size),
            children: HashMap::new(),
            probs: probs.map(Into::into),
            expanded: false,
        });
        self.nodes[parent].children.insert(token, id);
        // Off the trie until now: the parent's `off` loses the token, its children gain it.
        if !self.nodes[parent].dead.contains(token) {
            self.take_off(parent, edge_p);
        }
        sink.emit(Event::TrieInsert {
            prefix: self.prefix(id),
            mass: 1.0,
        });
        id
    }

    /// The live child node `node·token`, if it is in the trie and not pruned.
    pub fn child(&self, node: NodeId, token: TokenId) -> Option<NodeId> {
        let n = &self.nodes[node];
        if n.dead.contains(token) {
            return None;
        }
        n.children.get(&token).copied()
    }

    /// p_ua for a node u and token a: 0 pruned, the child's mass, or 1 off the trie.
    pub fn child_mass(&self, node: NodeId, token: TokenId) -> f64 {
        let n = &self.nodes[node];
        if n.dead.contains(token) {
            return 0.0;
        }
        n.children.get(&token).map_or(1.0, |&c| self.nodes[c].p)
    }

    /// The unnormalized R^W weights P(a|u)·p_ua at node u: O(|V|) copying plus work in
    /// the number of pruned tokens and children.
    pub fn weights(&self, node: NodeId, probs: &[f64]) -> Vec<f64> {
        let n = &self.nodes[node];
        let mut w: Vec<f64> = probs.iter().map(|&p| p.max(0.0)).collect();
        for (&t, &c) in &n.children {
            if let Some(x) = w.get_mut(t as usize) {
                *x *= self.nodes[c].p;
            }
        }
        for t in n.dead.iter() {
            if let Some(x) = w.get_mut(t as usize) {
                *x = 0.0;
            }
        }
        w
    }

    /// P(·|u) if the node cached it.
    pub fn cached_probs(&self, node: NodeId) -> Option<Rc<[f64]>> {
        self.nodes[node].probs.clone()
    }

    /// The node's mass p_u (c̃(u) for ASAp).
    pub fn node_mass(&self, node: NodeId) -> f64 {
        self.nodes[node].p
    }

    /// Whether every non-viable continuation of the node is already pruned.
    pub fn is_expanded(&self, node: NodeId) -> bool {
        self.nodes[node].expanded
    }

    /// Records that every non-viable continuation of the node is pruned.
    pub fn set_expanded(&mut self, node: NodeId) {
        self.nodes[node].expanded = true;
    }

    /// The token prefix of a node.
    pub fn prefix(&self, mut node: NodeId) -> Vec<TokenId> {
        let mut out = Vec::new();
        while let Some(parent) = self.nodes[node].parent {
            out.push(self.nodes[node].token);
            node = parent;
        }
        out.reverse();
        out
    }

    /// p_u of any prefix: follows the trie, 0 below a pruned continuation, 1 off the trie.
    pub fn mass(&self, prefix: &[TokenId]) -> f64 {
        if !self.has_root {
            return 1.0;
        }
        let mut node = ROOT;
        for &t in prefix {
            if self.nodes[node].dead.contains(t) {
                return 0.0;
            }
            match self.nodes[node].children.get(&t) {
                Some(&c) => node = c,
                None => return 1.0,
            }
        }
        self.nodes[node].p
    }

    /// Every node as (prefix, mass), in insertion order.
    pub fn entries(&self) -> Vec<(Vec<TokenId>, f64)> {
        (0..self.nodes.len())
            .map(|id| (self.prefix(id), self.nodes[id].p))
            .collect()
    }

    /// Prunes continuations `ua` (given as (a, P(a|u))) of node u: p_ua becomes 0 and the
    /// loss travels up to the root. Does nothing on a frozen trie.
    pub fn prune(&mut self, node: NodeId, tokens: &[(TokenId, f64)], sink: &mut dyn EventSink) {
        if self.frozen {
            return;
        }
        let old = self.nodes[node].p;
        let mut removed = 0.0;
        let mut pruned: Vec<(TokenId, f64)> = Vec::new();
        for &(t, pt) in tokens {
            if self.nodes[node].dead.contains(t) {
                continue;
            }
            let current = self.child_mass(node, t);
            let off_trie = !self.nodes[node].children.contains_key(&t);
            let n = &mut self.nodes[node];
            n.dead.insert(t);
            removed += pt * current;
            if pt > 0.0 && current > 0.0 {
                n.live -= 1;
            }
            if off_trie {
                self.take_off(node, pt);
            }
            pruned.push((t, pt));
        }
        if pruned.is_empty() {
            return;
        }
        self.refresh(node);
        let count = pruned.len();
        // The event lists the top k: select them, then sort only those (an expansion
        // prunes most of the vocabulary, and a full sort of it cost CARS 5% of its time).
        // Ties go by token id, as the full sort left them (the tokens come in id order).
        let by_mass =
            |a: &(TokenId, f64), b: &(TokenId, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if self.top_k == 0 {
            pruned.clear();
        } else if self.top_k < count {
            pruned.select_nth_unstable_by(self.top_k - 1, by_mass);
            pruned.truncate(self.top_k);
        }
        pruned.sort_by(by_mass);
        sink.emit(Event::TriePrune {
            prefix: self.prefix(node),
            count,
            removed,
            top: pruned,
        });
        self.propagate_from(node, old, sink);
    }

    /// `off` of `node` loses `x` (a continuation leaves it): by subtraction while at least
    /// half remains, else summed afresh from P(·|u) where the node cached it.
    fn take_off(&mut self, node: NodeId, x: f64) {
        if x <= 0.0 {
            return;
        }
        let n = &self.nodes[node];
        let left = n.off - x;
        if left >= 0.5 * n.off {
            self.nodes[node].off = left;
            return;
        }
        let fresh = n.probs.as_ref().map(|probs| {
            probs
                .iter()
                .enumerate()
                .filter(|&(a, &p)| {
                    p > 0.0
                        && !n.dead.contains(a as TokenId)
                        && !n.children.contains_key(&(a as TokenId))
                })
                .map(|(_, &p)| p)
                .sum::<f64>()
        });
        self.nodes[node].off = fresh.unwrap_or(left.max(0.0));
    }

    /// Recomputes p_u = off + Σ_children P(c|u)·p_c (exactly 0 with no live continuation).
    fn refresh(&mut self, node: NodeId) {
        let n = &self.nodes[node];
        let p = if n.live == 0 {
            0.0
        } else {
            let kept: f64 = n
                .children
                .iter()
                .filter(|&(&t, _)| !n.dead.contains(t))
                .map(|(_, &c)| self.nodes[c].edge_p * self.nodes[c].p)
                .sum();
            (n.off + kept).min(1.0)
        };
        self.nodes[node].p = p;
    }

    /// When p_u changed from `old`, its parent loses P(u|parent)·(old − new), and so on up.
    fn propagate_from(&mut self, mut node: NodeId, mut old: f64, sink: &mut dyn EventSink) {
        #[cfg(test)]
        if !self.propagate {
            return;
        }
        loop {
            let new = self.nodes[node].p;
            let Some(parent) = self.nodes[node].parent else {
                break;
            };
            let (token, edge_p) = (self.nodes[node].token, self.nodes[node].edge_p);
            // Dead only when no continuation is live, never because a mass is tiny (a
            // mass that had already underflowed to 0 may die without changing).
            let dies = self.nodes[node].live == 0 && !self.nodes[parent].dead.contains(token);
            if new == old && !dies {
                break;
            }
            let parent_old = self.nodes[parent].p;
            let pn = &mut self.nodes[parent];
            if dies {
                pn.dead.insert(token);
                if edge_p > 0.0 {
                    pn.live -= 1;
                }
            }
            self.refresh(parent);
            sink.emit(Event::TrieUpdate {
                prefix: self.prefix(parent),
                mass: self.nodes[parent].p,
                removed: parent_old - self.nodes[parent].p,
            });
            node = parent;
            old = parent_old;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NullSink, VecSink};

    /// Builds the arithmetic example of seed 002 Fig. 2 in miniature: root with P = (0.3,
    /// 0.7) over tokens {0, 1}; child 1 with P = (0.45, 0.55).
    fn small() -> (Trie, NodeId) {
        let mut t = Trie::new(2);
        let r = t.ensure_root(&[0.3, 0.7], &mut NullSink);
        let c = t.ensure_child(r, 1, 0.7, &[0.45, 0.55], &mut NullSink);
        (t, c)
    }

    #[test]
    fn pruning_propagates_upward_by_edge_probability() {
        let (mut t, c) = small();
        let mut sink = VecSink::default();
        t.prune(c, &[(0, 0.45)], &mut sink);
        assert!((t.node_mass(c) - 0.55).abs() < 1e-15);
        // The root loses P(1)·0.45 = 0.315.
        assert!((t.p_root() - (1.0 - 0.315)).abs() < 1e-15);
        assert_eq!(t.mass(&[1, 0]), 0.0);
        assert_eq!(t.mass(&[1, 1]), 1.0);
        assert_eq!(t.mass(&[0, 1, 1]), 1.0);
        assert!(matches!(sink.0[0], Event::TriePrune { count: 1, .. }));
        assert!(matches!(sink.0[1], Event::TrieUpdate { .. }));
        // Weights at the root are P(a)·p_a.
        let w = t.weights(ROOT, &[0.3, 0.7]);
        assert!((w[0] - 0.3).abs() < 1e-15 && (w[1] - 0.7 * 0.55).abs() < 1e-15);
        // Pruning the same token twice changes nothing.
        t.prune(c, &[(0, 0.45)], &mut NullSink);
        assert!((t.node_mass(c) - 0.55).abs() < 1e-15);
    }

    #[test]
    fn exhausted_node_is_exactly_zero_and_dead_in_its_parent() {
        let (mut t, c) = small();
        t.prune(c, &[(0, 0.45), (1, 0.55)], &mut NullSink);
        assert_eq!(t.node_mass(c), 0.0);
        assert_eq!(t.child(ROOT, 1), None);
        assert!((t.p_root() - 0.3).abs() < 1e-15);
        t.prune(ROOT, &[(0, 0.3)], &mut NullSink);
        assert_eq!(t.p_root(), 0.0);
        assert!(t.root_is_dead());
    }

    #[test]
    fn frozen_trie_ignores_updates_and_mutant_does_not_propagate() {
        let (mut t, c) = small();
        t.freeze();
        t.prune(c, &[(0, 0.45)], &mut NullSink);
        assert_eq!(t.p_root(), 1.0);
        let mut m = Trie::without_propagation(2);
        let r = m.ensure_root(&[0.3, 0.7], &mut NullSink);
        let c = m.ensure_child(r, 1, 0.7, &[0.45, 0.55], &mut NullSink);
        m.prune(c, &[(0, 0.45)], &mut NullSink);
        assert_eq!(m.p_root(), 1.0);
        assert!((m.node_mass(c) - 0.55).abs() < 1e-15);
    }

    #[test]
    fn tiny_masses_keep_their_relative_precision() {
        // P(0|ε) rounds to 1: 1 − (mass removed) would be 0, the mass left is 1e-30.
        let mut t = Trie::new(3);
        let r = t.ensure_root(&[1.0, 1e-30, 0.0], &mut NullSink);
        t.prune(r, &[(0, 1.0)], &mut NullSink);
        assert_eq!(t.p_root(), 1e-30);
        // Below it, a child whose own mass is 1e-20 after pruning: p_ε = 1e-30 · 1e-20.
        let c = t.ensure_child(r, 1, 1e-30, &[1.0 - 1e-20, 1e-20, 0.0], &mut NullSink);
        t.prune(c, &[(0, 1.0 - 1e-20)], &mut NullSink);
        assert!(
            (t.node_mass(c) - 1e-20).abs() <= 1e-20 * 1e-12,
            "{}",
            t.node_mass(c)
        );
        assert!(
            (t.p_root() - 1e-50).abs() <= 1e-50 * 1e-12,
            "{}",
            t.p_root()
        );
    }

    #[test]
    fn a_live_node_is_never_dead_even_where_its_mass_underflows() {
        // A child without cached probabilities: its mass cancels to 0, but a continuation
        // is still live, so it stays in its parent.
        let mut t = Trie::new(2);
        let r = t.ensure_root(&[0.5, 0.5], &mut NullSink);
        let c = t.ensure_child_with(r, 1, 0.5, 2, None, &mut NullSink);
        t.prune(c, &[(0, 1.0 - 1e-20)], &mut NullSink);
        assert_eq!(t.child(r, 1), Some(c));
        assert!(!t.root_is_dead());
        t.prune(c, &[(1, 1e-20)], &mut NullSink);
        assert_eq!(t.node_mass(c), 0.0);
        assert_eq!(t.child(r, 1), None);
    }
}
