//! The trie laid out as a tree for drawing: which nodes fit, where each goes, which are on
//! the latest generation's path, and how many are folded away.
//!
//! A long run's trie can hold thousands of nodes; the drawing keeps the shallowest ones (a
//! breadth-first cut at `max_nodes`), always the path the sampler is on, and folds every
//! dead subtree into its dead root (pruned branches collapse). Leaves take one row each,
//! top to bottom in token order; a parent sits midway between its first and last child;
//! depth runs left to right.

use super::{Labels, TrieView};
use sampler_core::TokenId;
use std::collections::{BTreeMap, HashSet, VecDeque};

/// Pixels between depths.
pub const DEPTH_STEP: f64 = 90.0;
/// Pixels between rows of leaves.
pub const ROW_STEP: f64 = 22.0;
/// Margin around the drawing.
pub const MARGIN: f64 = 16.0;

/// One node as drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct DrawnNode {
    /// Its prefix (the root's is empty).
    pub prefix: Vec<TokenId>,
    /// The text of its last token ("ε" for the root).
    pub label: String,
    /// Its position, in pixels.
    pub x: f64,
    /// Its position, in pixels.
    pub y: f64,
    /// Its mass (p_u, or ASAp's c̃).
    pub mass: f64,
    /// Mass 0: the subtree is pruned for good.
    pub dead: bool,
    /// On the path to the node the latest event touched.
    pub on_path: bool,
    /// Index of its parent in [`TrieDrawing::nodes`].
    pub parent: Option<usize>,
    /// Nodes below it that are not drawn.
    pub folded: usize,
    /// Continuations pruned at it (proven non-viable).
    pub pruned_count: usize,
    /// The most likely pruned continuations, as text with P(a|u).
    pub pruned: Vec<(String, f64)>,
}

/// The trie as drawn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrieDrawing {
    /// Drawn nodes, parents before children.
    pub nodes: Vec<DrawnNode>,
    /// Width of the drawing, in pixels.
    pub width: f64,
    /// Height of the drawing, in pixels.
    pub height: f64,
    /// Nodes of the trie that are not drawn.
    pub folded: usize,
}

impl TrieView {
    /// Lays out at most `max_nodes` nodes (plus the path to the latest touched node).
    pub fn drawing(&self, labels: &Labels, max_nodes: usize) -> TrieDrawing {
        if self.nodes.is_empty() {
            return TrieDrawing::default();
        }
        let shown = self.chosen(max_nodes);
        let path: HashSet<&[TokenId]> = match &self.last_prefix {
            Some(p) => (0..=p.len()).map(|k| &p[..k]).collect(),
            None => HashSet::new(),
        };
        // Parents before children: the map's order on prefixes is depth-first.
        let mut nodes: Vec<DrawnNode> = Vec::new();
        let mut index: BTreeMap<&[TokenId], usize> = BTreeMap::new();
        for (prefix, node) in self
            .nodes
            .iter()
            .filter(|(p, _)| shown.contains(p.as_slice()))
        {
            let parent = (!prefix.is_empty())
                .then(|| index.get(&prefix[..prefix.len() - 1]).copied())
                .flatten();
            index.insert(prefix, nodes.len());
            nodes.push(DrawnNode {
                prefix: prefix.clone(),
                label: prefix
                    .last()
                    .map_or_else(|| "ε".to_string(), |&t| labels.label(t)),
                x: MARGIN + prefix.len() as f64 * DEPTH_STEP,
                y: 0.0,
                mass: node.mass,
                dead: node.mass <= 0.0,
                on_path: path.contains(prefix.as_slice()),
                parent,
                folded: 0,
                pruned_count: node.pruned_count,
                pruned: node
                    .pruned
                    .iter()
                    .take(4)
                    .map(|&(t, p)| (labels.label(t), p))
                    .collect(),
            });
        }
        // Every hidden node counts at its deepest drawn ancestor.
        let mut folded = 0;
        for prefix in self.nodes.keys().filter(|p| !shown.contains(p.as_slice())) {
            folded += 1;
            if let Some(i) = (0..prefix.len())
                .rev()
                .find_map(|k| index.get(&prefix[..k]).copied())
            {
                nodes[i].folded += 1;
            }
        }
        // Rows: leaves in order; each parent midway between its first and last child.
        let mut span: Vec<Option<(f64, f64)>> = vec![None; nodes.len()];
        let mut leaves = 0usize;
        for i in 0..nodes.len() {
            let is_leaf = nodes.get(i + 1).is_none_or(|n| n.parent != Some(i));
            if is_leaf {
                nodes[i].y = MARGIN + leaves as f64 * ROW_STEP;
                leaves += 1;
            }
        }
        for i in (0..nodes.len()).rev() {
            if let Some((lo, hi)) = span[i] {
                nodes[i].y = (lo + hi) / 2.0;
            }
            if let Some(p) = nodes[i].parent {
                let y = nodes[i].y;
                span[p] = Some(match span[p] {
                    Some((lo, hi)) => (lo.min(y), hi.max(y)),
                    None => (y, y),
                });
            }
        }
        let depth = nodes.iter().map(|n| n.prefix.len()).max().unwrap_or(0);
        TrieDrawing {
            width: 2.0 * MARGIN + depth as f64 * DEPTH_STEP + 80.0,
            height: 2.0 * MARGIN + leaves.saturating_sub(1) as f64 * ROW_STEP,
            nodes,
            folded,
        }
    }

    /// The prefixes drawn: breadth-first up to `max_nodes`, not below a dead node, plus
    /// the path to the latest touched node.
    fn chosen(&self, max_nodes: usize) -> HashSet<&[TokenId]> {
        let mut shown: HashSet<&[TokenId]> = HashSet::new();
        let mut queue: VecDeque<&[TokenId]> = VecDeque::new();
        if let Some((root, _)) = self.nodes.iter().next() {
            queue.push_back(root.as_slice());
        }
        while let Some(prefix) = queue.pop_front() {
            if shown.len() >= max_nodes {
                break;
            }
            shown.insert(prefix);
            if self.nodes.get(prefix).is_some_and(|n| n.mass > 0.0) {
                for (k, _) in self
                    .nodes
                    .range(prefix.to_vec()..)
                    .take_while(|(k, _)| k.starts_with(prefix))
                    .filter(|(k, _)| k.len() == prefix.len() + 1)
                {
                    queue.push_back(k.as_slice());
                }
            }
        }
        if let Some(p) = &self.last_prefix {
            for k in 0..=p.len() {
                if let Some((key, _)) = self.nodes.get_key_value(&p[..k]) {
                    shown.insert(key.as_slice());
                }
            }
        }
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sampler_core::Event;

    fn labels() -> Labels {
        Labels::new(9, |t| t.to_string())
    }

    fn insert(v: &mut TrieView, prefix: &[TokenId], mass: f64) {
        v.apply(&Event::TrieInsert {
            prefix: prefix.to_vec(),
            mass,
        });
    }

    /// A root with children 0 (dead, with a child of its own), 1 and 2; 1 has 1·0 and 1·1.
    fn sample() -> TrieView {
        let mut v = TrieView::default();
        insert(&mut v, &[], 0.7);
        insert(&mut v, &[0], 0.0);
        insert(&mut v, &[0, 0], 0.5);
        insert(&mut v, &[1], 0.9);
        insert(&mut v, &[1, 0], 1.0);
        insert(&mut v, &[1, 1], 0.4);
        insert(&mut v, &[2], 1.0);
        v
    }

    #[test]
    fn lays_out_a_tidy_tree_and_folds_dead_subtrees() {
        let v = sample();
        let d = v.drawing(&labels(), 100);
        let prefixes: Vec<_> = d.nodes.iter().map(|n| n.prefix.clone()).collect();
        // The dead node 0 is drawn, its child folded into it.
        assert_eq!(
            prefixes,
            vec![vec![], vec![0], vec![1], vec![1, 0], vec![1, 1], vec![2]]
        );
        assert_eq!(d.folded, 1);
        assert!(d.nodes[1].dead && d.nodes[1].folded == 1);
        for (i, n) in d.nodes.iter().enumerate() {
            match n.parent {
                Some(p) => {
                    assert_eq!(d.nodes[p].prefix[..], n.prefix[..n.prefix.len() - 1]);
                    assert!(p < i && d.nodes[p].x < n.x);
                }
                None => assert!(n.prefix.is_empty()),
            }
            assert!(n.x <= d.width && n.y <= d.height);
        }
        // Leaves one row apart, top to bottom; parents midway between their children.
        let y = |p: &[TokenId]| d.nodes.iter().find(|n| n.prefix == p).unwrap().y;
        assert_eq!(y(&[1, 1]) - y(&[1, 0]), ROW_STEP);
        assert_eq!(y(&[1]), (y(&[1, 0]) + y(&[1, 1])) / 2.0);
        assert_eq!(y(&[]), (y(&[0]) + y(&[2])) / 2.0);
    }

    #[test]
    fn keeps_the_latest_path_beyond_the_limit() {
        let mut v = sample();
        // The latest event touched 1·1: its path stays drawn with room for three nodes.
        v.apply(&Event::TrieUpdate {
            prefix: vec![1, 1],
            mass: 0.3,
            removed: 0.1,
        });
        let d = v.drawing(&labels(), 3);
        let on_path: Vec<_> = d
            .nodes
            .iter()
            .filter(|n| n.on_path)
            .map(|n| n.prefix.clone())
            .collect();
        assert_eq!(on_path, vec![vec![], vec![1], vec![1, 1]]);
        // The limit holds apart from the path, and every node is drawn or folded.
        assert!(d.nodes.len() <= 3 + 3);
        assert_eq!(d.nodes.len() + d.folded, v.nodes.len());
        assert_eq!(
            d.nodes.iter().map(|n| n.folded).sum::<usize>(),
            d.folded,
            "each folded node counts at one drawn ancestor"
        );
    }
}
