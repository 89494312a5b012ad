//! [`SumTree`]: weights in a complete binary tree of partial sums, so that a weighted draw
//! and taking one weight out each cost O(log V) instead of a pass over the vocabulary.
//!
//! The token samplers that draw again and again at one step (AWRS and ARS without
//! replacement, WRS with it) build one tree a step and draw from it through
//! [`crate::RandomSource::categorical_tree`]. Every inner node is recomputed as the sum of
//! its two children after a change, never decremented, so no cancellation creeps in
//! however many weights are removed: the remaining total keeps its relative precision
//! when it is tiny (the case of a constraint that keeps little of the model's mass).

/// Non-negative weights with their partial sums: O(log n) draws and removals.
#[derive(Clone, Debug)]
pub struct SumTree {
    /// Number of leaves (the weights' length).
    len: usize,
    /// First leaf's index: the smallest power of two ≥ `len` (at least 1).
    leaves: usize,
    /// `nodes[1]` is the root, node i has children 2i and 2i + 1, leaf j is
    /// `nodes[leaves + j]`; unused leaves hold 0.
    nodes: Vec<f64>,
}

impl SumTree {
    /// The tree over `weights`; negative weights count as 0 and a NaN makes the total NaN.
    pub fn new(weights: &[f64]) -> SumTree {
        let leaves = weights.len().next_power_of_two().max(1);
        let mut nodes = vec![0.0; 2 * leaves];
        for (slot, &w) in nodes[leaves..].iter_mut().zip(weights) {
            *slot = if w > 0.0 || w.is_nan() { w } else { 0.0 };
        }
        for i in (1..leaves).rev() {
            nodes[i] = nodes[2 * i] + nodes[2 * i + 1];
        }
        SumTree {
            len: weights.len(),
            leaves,
            nodes,
        }
    }

    /// Number of weights.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no weights.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The sum of the weights left (NaN when a weight is NaN).
    pub fn total(&self) -> f64 {
        self.nodes[1]
    }

    /// The weight of index `i`.
    pub fn weight(&self, i: usize) -> f64 {
        self.nodes[self.leaves + i]
    }

    /// Every weight, in order (what an enumerating random source draws from).
    pub fn weights(&self) -> &[f64] {
        &self.nodes[self.leaves..self.leaves + self.len]
    }

    /// Sets the weight of index `i` to 0 and recomputes the sums above it.
    pub fn remove(&mut self, i: usize) {
        let mut node = self.leaves + i;
        self.nodes[node] = 0.0;
        while node > 1 {
            node /= 2;
            self.nodes[node] = self.nodes[2 * node] + self.nodes[2 * node + 1];
        }
    }

    /// The index whose interval of the cumulative weights holds `u` ∈ [0, total): the
    /// inverse of the cumulative distribution, as a linear scan would find it. Never an
    /// index of weight 0, even when rounding puts `u` at or past the total. Call only with
    /// a positive total.
    pub fn find(&self, mut u: f64) -> usize {
        let mut node = 1;
        while node < self.leaves {
            let (left, right) = (self.nodes[2 * node], self.nodes[2 * node + 1]);
            // A subtree of weight 0 is never entered: the node's weight is positive, so
            // when one child is 0 the other is not.
            if (u < left && left > 0.0) || right <= 0.0 {
                node *= 2;
            } else {
                u -= left;
                node = 2 * node + 1;
            }
        }
        node - self.leaves
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::rng::inverse_cdf as scan;

    #[test]
    fn find_inverts_the_cumulative_weights_like_a_scan() {
        let w = [0.5, 0.0, 0.25, 0.125, 0.0, 0.125];
        let t = SumTree::new(&w);
        assert_eq!(t.total(), 1.0);
        for k in 0..64 {
            let u = k as f64 / 64.0;
            assert_eq!(t.find(u), scan(&w, u), "u = {u}");
        }
        // At or past the total (rounding): the last positive weight, never a zero.
        assert_eq!(t.find(1.0), 5);
        assert_eq!(t.find(7.0), 5);
    }

    #[test]
    fn removing_weights_keeps_sums_exact_and_skips_removed_indices() {
        let w: Vec<f64> = (0..37).map(|i| (i % 5) as f64 * 1e-300 + 1e-310).collect();
        let mut t = SumTree::new(&w);
        let mut left = w.clone();
        for i in [3, 36, 0, 17, 18, 19] {
            t.remove(i);
            left[i] = 0.0;
            let exact: f64 = left.iter().sum();
            assert!(
                (t.total() - exact).abs() <= 1e-12 * exact,
                "{} vs {exact}",
                t.total()
            );
            for k in 0..200 {
                let u = t.total() * k as f64 / 200.0;
                let j = t.find(u);
                assert!(left[j] > 0.0, "found removed index {j}");
                assert_eq!(j, scan(&left, u));
            }
        }
        assert_eq!(t.weight(3), 0.0);
        assert_eq!(t.weights().len(), 37);
    }

    #[test]
    fn a_tiny_total_after_removing_the_bulk_keeps_its_precision() {
        // 1 − 1e-15 of the mass on one token, the rest spread thin: after removing the
        // big one the total is the small ones' sum, not 1 − (1 − 1e-15) rounded.
        let mut w = vec![1e-20; 1000];
        w[7] = 1.0 - 1e-17;
        let mut t = SumTree::new(&w);
        t.remove(7);
        assert!((t.total() - 999e-20).abs() < 1e-30, "{}", t.total());
    }

    #[test]
    fn negative_weights_count_as_zero_and_nan_poisons_the_total() {
        let t = SumTree::new(&[-1.0, 2.0]);
        assert_eq!((t.total(), t.find(0.0)), (2.0, 1));
        assert!(SumTree::new(&[1.0, f64::NAN]).total().is_nan());
        assert_eq!(SumTree::new(&[]).total(), 0.0);
        assert_eq!(SumTree::new(&[3.0]).find(1.0), 0);
    }
}
