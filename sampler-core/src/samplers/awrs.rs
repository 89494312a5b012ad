//! Weighted rejection token samplers (seed 003 Def. 1-2, Listings 1-2 of App. E) and
//! `awrs-lcd`, the adaptive rejection loop used as a sequence sampler without the weight.
//!
//! Each token sampler draws a next token from the constrained distribution
//! p(x) ∝ p0(x)·1_C(x) by rejection, checking the constraint one token at a time, and
//! returns Ẑ, an unbiased estimate of Z = Σ p0(x)·1_C(x): the pair is properly weighted
//! (E[Ẑ·f(x)] = Z·E_p[f(x)]), which is what SMC needs.

use super::Ctx;
use super::cut::within;
use crate::exp::exp64;
use crate::{Constraint, LanguageModel, RandomSource, SampleError, SumTree, TokenId};

/// Rejections after which [`wrs`] stops (clipped WRS, seed 003 Def. 8): the weight stays
/// properly weighted, and a constraint with Z = 0 cannot loop forever.
pub const WRS_MAX_REJECTIONS: usize = 10_000;

/// One token drawn by a rejection token sampler.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenDraw {
    /// The accepted token; `None` when no token with positive mass is allowed (Ẑ = 0).
    pub token: Option<TokenId>,
    /// Ẑ, the unbiased estimate of the allowed mass Z (0 when `token` is `None`).
    pub z_hat: f64,
    /// Rejected draws in order (AWRS: each token once; WRS: with repeats).
    pub rejected: Vec<TokenId>,
    /// Constraint checks made (rejections plus acceptances).
    pub checks: usize,
}

/// Draws from `weights` (taking each rejected token out) until an allowed token; `None`
/// when no mass is left. The first loop of AWRS, and all of ARS. Each draw and each removal
/// is O(log V) on the [`SumTree`], so a step with hundreds of rejections costs hundreds of
/// tree walks, not hundreds of passes over the vocabulary.
fn adaptive_loop(
    weights: &mut SumTree,
    rng: &mut dyn RandomSource,
    allowed: &mut dyn FnMut(TokenId) -> bool,
    rejected: &mut Vec<TokenId>,
    checks: &mut usize,
) -> Option<TokenId> {
    loop {
        // A NaN total (weights that are not numbers) is no mass either.
        let total = weights.total();
        if total.is_nan() || total <= 0.0 {
            return None;
        }
        let x = rng.categorical_tree(weights) as TokenId;
        *checks += 1;
        if allowed(x) {
            return Some(x);
        }
        weights.remove(x as usize);
        rejected.push(x);
    }
}

/// Adaptive rejection sampling of one token without a weight (ARS-LCD, seed 003 §4):
/// an exact draw from p0 restricted to allowed tokens; `z_hat` is not estimated (0).
pub fn ars(
    probs: &[f64],
    rng: &mut dyn RandomSource,
    allowed: &mut dyn FnMut(TokenId) -> bool,
) -> TokenDraw {
    let mut weights = SumTree::new(probs);
    let (mut rejected, mut checks) = (Vec::new(), 0);
    let token = adaptive_loop(&mut weights, rng, allowed, &mut rejected, &mut checks);
    TokenDraw {
        token,
        z_hat: 0.0,
        rejected,
        checks,
    }
}

/// Adaptive weighted rejection sampling (seed 003 Def. 2, Listing 2, L = 1): loop 1 draws
/// the token x without replacement of rejections; loop 2 continues on the remaining
/// tokens; Ẑ = (1 − ψ0)/(n + 1), ψ0 the mass rejected in loop 1, n the rejections of both.
///
/// `probs` are p0 (they need not sum exactly to 1: 1 − ψ0 is computed as the mass left
/// after loop 1, which is the same number without cancellation when Z is tiny).
pub fn awrs(
    probs: &[f64],
    rng: &mut dyn RandomSource,
    allowed: &mut dyn FnMut(TokenId) -> bool,
) -> TokenDraw {
    awrs_impl(probs, rng, allowed, Numerator::Loop1)
}

/// Which rejected mass [`awrs_impl`] removes from Ẑ's numerator.
#[derive(Clone, Copy)]
enum Numerator {
    /// Seed 003 Def. 2: the mass rejected in loop 1 only.
    Loop1,
    /// Test-only mutant: the mass rejected in both loops (the tests must catch it).
    #[cfg(test)]
    BothLoops,
}

/// [`awrs`], with Ẑ's numerator as `numerator` says.
fn awrs_impl(
    probs: &[f64],
    rng: &mut dyn RandomSource,
    allowed: &mut dyn FnMut(TokenId) -> bool,
    numerator: Numerator,
) -> TokenDraw {
    let mut weights = SumTree::new(probs);
    let (mut rejected, mut checks) = (Vec::new(), 0);
    let Some(x) = adaptive_loop(&mut weights, rng, allowed, &mut rejected, &mut checks) else {
        return TokenDraw {
            token: None,
            z_hat: 0.0,
            rejected,
            checks,
        };
    };
    let kept_after_loop1 = weights.total();
    // Loop 2 always ends: x is allowed and still in `weights`.
    adaptive_loop(&mut weights, rng, allowed, &mut rejected, &mut checks);
    let kept = match numerator {
        Numerator::Loop1 => kept_after_loop1,
        #[cfg(test)]
        Numerator::BothLoops => weights.total(),
    };
    TokenDraw {
        token: Some(x),
        z_hat: kept / (rejected.len() + 1) as f64,
        rejected,
        checks,
    }
}

/// Weighted rejection sampling (seed 003 Def. 1, Listing 1) with `l` ≥ 1 extra loops,
/// clipped after `max_rejections` rejections (Def. 8): draws with replacement until l + 1
/// acceptances; Ẑ = l/(n + l) with n the rejections (the negative-binomial MVUE). When
/// clipped with s ≤ l acceptances among T draws, Ẑ = s/(T − 1) and the token is the first
/// acceptance, or `None` (Ẑ = 0) when there was none.
///
/// # Why n − 1 and not Def. 8's n + 1
/// Def. 8 of seed 003 as printed divides by n + 1 (n = r + s draws): Ẑ = (s − 1)/(n + 1)
/// when it stops on the (L+1)-th acceptance and s/(n + 1) when it stops on the R-th
/// rejection. Both are biased. The derivation the paper names gives n − 1 instead. It
/// Rao-Blackwellizes 1_C(x_1), whose mean is Z, given the stopping point (r, s): every
/// draw sequence with the same (r, s) has the same probability Z^s (1 − Z)^r, so
/// E[1_C(x_1) | r, s] is the share of those sequences that start with an acceptance:
/// - stopped on an acceptance (s = L + 1): the last draw is fixed, and the other s − 1
///   acceptances sit among the first n − 1 draws in C(n − 1, s − 1) ways. In C(n − 2, s − 2)
///   of them x_1 is one, so Ẑ = C(n − 2, s − 2)/C(n − 1, s − 1) = (s − 1)/(n − 1) = L/(r + L);
/// - stopped on a rejection (r = R): the s acceptances sit among the first n − 1 draws,
///   C(n − 1, s) ways, x_1 among them in C(n − 2, s − 1), so Ẑ = s/(n − 1).
///
/// With n = 1 (R = 1 and the first draw rejected) the share is 0. An estimator
/// conditioned on a sufficient statistic keeps the mean of 1_C(x_1), so both cases give
/// E[Ẑ] = Z; the x returned is the first acceptance, and E[Ẑ·f(x)] = Z·E_p[f] follows the
/// same way. `wrs_clipped_is_properly_weighted_by_enumeration` checks it by enumerating
/// every path at several (L, R). The printed n + 1 would fail that test. For L = 1 with no
/// clip it would give E[Ẑ] = Σ_r (r + 1) Z² (1 − Z)^r/(r + 3) < Σ_r Z² (1 − Z)^r = Z.
pub fn wrs(
    probs: &[f64],
    l: usize,
    max_rejections: usize,
    rng: &mut dyn RandomSource,
    allowed: &mut dyn FnMut(TokenId) -> bool,
) -> TokenDraw {
    let l = l.max(1);
    let (mut rejected, mut accepted, mut first) = (Vec::new(), 0usize, None);
    // With replacement: the tree is built once and only drawn from.
    let tree = SumTree::new(probs);
    let total = tree.total();
    while accepted < l + 1 && rejected.len() < max_rejections && total > 0.0 {
        let x = rng.categorical_tree(&tree) as TokenId;
        if allowed(x) {
            accepted += 1;
            first.get_or_insert(x);
        } else {
            rejected.push(x);
        }
    }
    let draws = accepted + rejected.len();
    let z_hat = if draws < 2 {
        0.0
    } else if accepted == l + 1 {
        l as f64 / (rejected.len() + l) as f64
    } else {
        accepted as f64 / (draws - 1) as f64
    };
    TokenDraw {
        token: first,
        z_hat,
        rejected,
        checks: draws,
    }
}

/// `awrs-lcd`: `n` sequences, each token drawn by adaptive rejection (exact per token,
/// biased per sequence like `lcd`, but with few constraint checks).
pub async fn run_lcd<L: LanguageModel, C: Constraint>(
    ctx: &mut Ctx<'_, L, C>,
) -> Result<(), SampleError> {
    let eos = ctx.eos();
    for _ in 0..ctx.params().n {
        ctx.count_generations(1);
        let (mut tokens, mut state, mut logp) = (Vec::new(), ctx.initial(), 0.0);
        let mut ended = false;
        while within(tokens.len() + 1, ctx.params().max_tokens) {
            let lp = ctx.logprobs(&tokens).await?;
            let probs: Vec<f64> = lp.iter().map(|&l| exp64(l)).collect();
            let draw = {
                let (rng, mut allows) = ctx.rng_and_check(&state);
                ars(&probs, rng, &mut allows)
            };
            let Some(t) = draw.token else {
                return Err(ctx.dead_end(&tokens));
            };
            ctx.emit_token(0, tokens.len(), t, &lp, None, None);
            logp += lp[t as usize];
            tokens.push(t);
            if t == eos {
                ended = true;
                break;
            }
            state = ctx.advance(&state, t).ok_or_else(|| {
                SampleError::Unsupported("constraint refused an allowed token".into())
            })?;
        }
        ctx.finish(tokens, logp, ended, None, None)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samplers::path_enum::enumerate_paths;

    /// p0 over five tokens and which are allowed: Z = 0.1 + 0.05 = 0.15.
    const P0: [f64; 5] = [0.5, 0.1, 0.3, 0.05, 0.05];
    const OK: [bool; 5] = [false, true, false, true, false];

    fn z() -> f64 {
        P0.iter()
            .zip(OK)
            .filter(|(_, ok)| *ok)
            .map(|(p, _)| p)
            .sum()
    }

    /// Exact E[Ẑ·1{x = a}] for every token a and E[Ẑ], by enumerating every random path.
    fn exact_moments(
        sampler: &dyn Fn(&mut dyn RandomSource) -> TokenDraw,
    ) -> (Vec<f64>, f64, Vec<f64>) {
        let paths = enumerate_paths(1_000_000, |r| sampler(r)).unwrap();
        let total: f64 = paths.iter().map(|(p, _)| p).sum();
        assert!(
            (total - 1.0).abs() < 1e-12,
            "path probabilities sum to {total}"
        );
        let (mut weighted, mut dist, mut mean) = (vec![0.0; 5], vec![0.0; 5], 0.0);
        for (p, d) in &paths {
            if let Some(t) = d.token {
                weighted[t as usize] += p * d.z_hat;
                dist[t as usize] += p;
            }
            mean += p * d.z_hat;
        }
        (weighted, mean, dist)
    }

    fn allowed(t: TokenId) -> bool {
        OK[t as usize]
    }

    fn assert_properly_weighted(sampler: &dyn Fn(&mut dyn RandomSource) -> TokenDraw) {
        let (weighted, mean, dist) = exact_moments(sampler);
        for a in 0..5 {
            let target = if OK[a] { P0[a] } else { 0.0 };
            assert!(
                (weighted[a] - target).abs() < 1e-12,
                "E[Ẑ·1{{x={a}}}] = {} but p̃({a}) = {target}",
                weighted[a]
            );
            let exact = target / z();
            assert!((dist[a] - exact).abs() < 1e-12, "P(x={a}) = {}", dist[a]);
        }
        assert!((mean - z()).abs() < 1e-12);
    }

    /// AWRS's paths are finite: enumerate all of them. The token is exactly p, and
    /// E[Ẑ·1{x=a}] = p0(a)·1_C(a) for every a (proper weighting, Prop. 3), to 1e-12.
    #[test]
    fn awrs_is_exact_and_properly_weighted_by_enumeration() {
        assert_properly_weighted(&|r| awrs(&P0, r, &mut allowed));
    }

    /// ARS (loop 1 alone) draws exactly from p, by enumeration.
    #[test]
    fn ars_is_exact_by_enumeration() {
        let paths = enumerate_paths(1000, |r| ars(&P0, r, &mut allowed).token).unwrap();
        for a in 0..5u32 {
            let p: f64 = paths
                .iter()
                .filter(|(_, t)| *t == Some(a))
                .map(|(p, _)| p)
                .sum();
            let exact = if OK[a as usize] {
                P0[a as usize] / z()
            } else {
                0.0
            };
            assert!((p - exact).abs() < 1e-12, "P(x={a}) = {p}");
        }
    }

    /// The mutant that subtracts the mass rejected in both loops is biased low.
    #[test]
    fn awrs_with_psi_over_both_loops_is_caught() {
        let (_, mean, _) =
            exact_moments(&|r| awrs_impl(&P0, r, &mut allowed, Numerator::BothLoops));
        assert!(mean < z() - 1e-3, "mutant E[Ẑ] = {mean}, Z = {}", z());
    }

    /// Clipped WRS has finitely many paths; every clip level stays properly weighted
    /// (Def. 8), and the unclipped formula L/(n+L) is the one used below the clip.
    #[test]
    fn wrs_clipped_is_properly_weighted_by_enumeration() {
        for (l, max_rej) in [(1, 1), (1, 4), (2, 3), (1, 8)] {
            let (weighted, mean, _) = exact_moments(&|r| wrs(&P0, l, max_rej, r, &mut allowed));
            for a in 0..5 {
                let target = if OK[a] { P0[a] } else { 0.0 };
                assert!(
                    (weighted[a] - target).abs() < 1e-12,
                    "L={l} R={max_rej} a={a}"
                );
            }
            assert!((mean - z()).abs() < 1e-12);
        }
    }

    /// Ẑ means over many seeded draws lie within 3 standard errors of Z, for AWRS and WRS.
    #[test]
    fn z_hat_means_are_within_three_standard_errors() {
        let mut rng = crate::SeededRng::new(11);
        for name in ["awrs", "wrs"] {
            let n = 20_000;
            let zs: Vec<f64> = (0..n)
                .map(|_| match name {
                    "awrs" => awrs(&P0, &mut rng, &mut allowed).z_hat,
                    _ => wrs(&P0, 1, WRS_MAX_REJECTIONS, &mut rng, &mut allowed).z_hat,
                })
                .collect();
            let mean = zs.iter().sum::<f64>() / n as f64;
            let var = zs.iter().map(|z| (z - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let se = (var / n as f64).sqrt();
            assert!((mean - z()).abs() < 3.0 * se, "{name}: mean {mean} se {se}");
        }
    }

    /// With no allowed token both samplers stop with Ẑ = 0 instead of looping.
    #[test]
    fn nothing_allowed_gives_zero_weight() {
        let mut rng = crate::SeededRng::new(1);
        let d = awrs(&P0, &mut rng, &mut |_| false);
        assert_eq!((d.token, d.z_hat, d.checks), (None, 0.0, 5));
        let d = wrs(&P0, 1, 50, &mut rng, &mut |_| false);
        assert_eq!((d.token, d.z_hat, d.checks), (None, 0.0, 50));
        assert_eq!(ars(&P0, &mut rng, &mut |_| false).token, None);
    }
}
