//! The truncate-and-regenerate proposal of seed 000 §3.2: the cut distribution p_pos^w and
//! the proposal probability q(w'|w), summed over every cut the two sequences share.

use super::Trace;
use crate::math::logsumexp;

/// How the cut point is drawn (seed 000 §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truncation {
    /// p_pos uniform over the positions 0..|w| (EOS excluded).
    Uniform,
    /// p_pos(i) ∝ the perplexity of P(· | w_1:i).
    Priority,
    /// p_pos(0) = 1: regenerate from scratch (an independence sampler).
    Restart,
}

/// p_pos^w over the cuts 0..len(w): cut i keeps w_1:i and regenerates the rest.
pub fn cut_distribution<S>(truncation: Truncation, w: &Trace<S>) -> Vec<f64> {
    let n = w.len().max(1);
    match truncation {
        Truncation::Uniform => vec![1.0 / n as f64; n],
        Truncation::Restart => {
            let mut p = vec![0.0; n];
            p[0] = 1.0;
            p
        }
        Truncation::Priority => {
            if w.perplexity.is_empty() {
                return vec![1.0];
            }
            let total: f64 = w.perplexity.iter().sum();
            w.perplexity.iter().map(|pp| pp / total).collect()
        }
    }
}

/// log Σ_{t ≥ i} log Q_GCD(w_t | w_<t) for every i (entry len(w) is 0).
fn suffix_logq<S>(w: &Trace<S>) -> Vec<f64> {
    let mut s = vec![0.0; w.len() + 1];
    for i in (0..w.len()).rev() {
        s[i] = s[i + 1] + w.logq[i];
    }
    s
}

/// Length of the longest common prefix of the two token sequences.
pub fn common_prefix<S>(a: &Trace<S>, b: &Trace<S>) -> usize {
    a.tokens
        .iter()
        .zip(&b.tokens)
        .take_while(|(x, y)| x == y)
        .count()
}

/// log q(to | from) = log Σ_{i ≤ lcp} p_pos^from(i) · Q_GCD(to_{i+1:} | to_{1:i}).
pub fn log_proposal<S>(truncation: Truncation, from: &Trace<S>, to: &Trace<S>) -> f64 {
    let pos = cut_distribution(truncation, from);
    let suffix = suffix_logq(to);
    let lcp = common_prefix(from, to);
    let cuts = (0..pos.len().min(to.len())).take_while(|&i| i <= lcp);
    logsumexp(
        cuts.filter(|&i| pos[i] > 0.0)
            .map(|i| pos[i].ln() + suffix[i]),
    )
}

/// log p_pos^from(cut) · Q_GCD(to_{cut+1:} | to_{1:cut}): the drawn cut alone.
pub fn log_proposal_drawn_cut<S>(
    truncation: Truncation,
    from: &Trace<S>,
    to: &Trace<S>,
    cut: usize,
) -> f64 {
    let pos = cut_distribution(truncation, from);
    pos.get(cut).map_or(f64::NEG_INFINITY, |p| p.ln()) + suffix_logq(to)[cut.min(to.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(tokens: &[u32], logq: &[f64], pp: &[f64]) -> Trace<()> {
        Trace {
            tokens: tokens.to_vec(),
            logp: vec![0.0; tokens.len()],
            logq: logq.to_vec(),
            perplexity: pp.to_vec(),
            states: vec![Some(()); tokens.len()],
            valid: true,
        }
    }

    /// q sums p_pos(i)·Q(suffix) over the cuts up to the common prefix, by hand.
    #[test]
    fn proposal_sums_over_shared_cuts() {
        let l = |x: f64| x.ln();
        let w = trace(&[0, 1, 9], &[l(0.5), l(0.5), l(1.0)], &[1.0, 2.0, 1.0]);
        let v = trace(&[0, 2, 9], &[l(0.5), l(0.25), l(1.0)], &[1.0, 3.0, 1.0]);
        // Uniform from w: cuts 0 and 1 produce v (lcp = 1); 1/3·0.5·0.25 + 1/3·0.25.
        let want: f64 = (0.5 * 0.25 + 0.25) / 3.0;
        assert!((log_proposal(Truncation::Uniform, &w, &v) - want.ln()).abs() < 1e-12);
        // Priority from w: p_pos = (1, 2, 1)/4.
        let want: f64 = 0.25 * 0.125 + 0.5 * 0.25;
        assert!((log_proposal(Truncation::Priority, &w, &v) - want.ln()).abs() < 1e-12);
        // Restart: only cut 0.
        assert!((log_proposal(Truncation::Restart, &w, &v) - 0.125f64.ln()).abs() < 1e-12);
        // The drawn-cut variant sees one term only.
        let one = log_proposal_drawn_cut(Truncation::Uniform, &w, &v, 1);
        assert!((one - (0.25f64 / 3.0).ln()).abs() < 1e-12);
        assert_eq!(
            cut_distribution(Truncation::Restart, &w),
            vec![1.0, 0.0, 0.0]
        );
    }
}
