//! Injected randomness: every random choice a sampler makes goes through [`RandomSource`].

use crate::SumTree;

/// The source of every random choice a sampler makes.
///
/// Samplers draw discrete choices with [`RandomSource::categorical`], so a test can replace
/// the source with one that enumerates every branch and weighs it exactly.
pub trait RandomSource {
    /// A uniform draw in `[0, 1)`.
    fn uniform(&mut self) -> f64;
    /// An index drawn with probability proportional to `weights` (non-negative, not all 0).
    fn categorical(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        inverse_cdf(weights, self.uniform() * total)
    }
    /// An index drawn with probability proportional to the weights left in `tree` (total
    /// positive): O(log n) by descending the tree. An enumerating source overrides it to
    /// branch on [`SumTree::weights`], as it branches on `categorical`.
    fn categorical_tree(&mut self, tree: &SumTree) -> usize {
        tree.find(self.uniform() * tree.total())
    }
    /// `true` with probability `p`.
    fn bernoulli(&mut self, p: f64) -> bool {
        self.categorical(&[p.clamp(0.0, 1.0), (1.0 - p).clamp(0.0, 1.0)]) == 0
    }
}

/// The index whose interval of the cumulative `weights` holds `u`, by a linear scan that
/// skips zero weights; the last positive one when rounding puts `u` at or past the total.
/// [`RandomSource::categorical`] draws with it, and [`SumTree::find`] must agree with it.
pub fn inverse_cdf(weights: &[f64], mut u: f64) -> usize {
    let mut last = 0;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            last = i;
            if u < w {
                return i;
            }
            u -= w;
        }
    }
    last
}

/// A small, fast, seeded generator (SplitMix64); the same seed gives the same run everywhere.
#[derive(Clone, Debug)]
pub struct SeededRng(u64);

impl SeededRng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SeededRng(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl RandomSource for SeededRng {
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}
