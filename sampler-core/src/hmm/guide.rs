//! The HMM × tensorized-automaton product of P-GCD (seed 001): a backward pass over
//! (hidden state × automaton state × remaining budget) that gives, for every next token,
//! the HMM's probability that the constraint is satisfied within the token budget.
//!
//! With G_k(h, s) = P_HMM(the automaton, at `s`, reaches its final state within `k` more
//! tokens | the next token's hidden state is h):
//!
//! - G_0(h, s) = 1[s = final];
//! - G_k(h, s) = Σ_e T_out[s, e] · E[h, e] · (1 if T_in[e] = final else C_{k−1}(h, T_in[e])),
//!   with E[h, e] = Σ_v B_f[e, v] · B[h, v] (the HMM's emission mass on the edge's tokens)
//!   and C_k(h, s') = Σ_h' A[h, h'] · G_k(h', s').
//!
//! The final state is entered only by EOS and has no outgoing edge, so the events "first
//! reaches the final state after j tokens" are disjoint and G_k is a probability. After a
//! prefix with HMM belief α (the distribution of the next token's hidden state) and
//! automaton state s, with `r` tokens left counting the next one and the EOS:
//!
//! g(v) = P_HMM(satisfied within r | prefix, next token v)
//!      = Σ_h α(h)·B[h, v]·C_{r−1}(h, δ(s, v)) / Σ_h α(h)·B[h, v]   (v ≠ EOS),
//! g(EOS) = 1[s accepting].
//!
//! The proposal is q(v) ∝ P_LM(v | u)·g̃(v) over the tokens the budget mask allows, with
//! g̃ = max(g / max g, floor) so that every allowed token keeps some mass, and the
//! incremental weight P_LM(v | u)/q(v | u) = Σ_v' P_LM(v')·g̃(v') / g̃(v): the SMC target is
//! P^L (within the budget) whatever the HMM is; a better HMM only lowers the variance.

use super::Hmm;
use crate::math::logsumexp;
use crate::{SampleError, TensorizedAutomaton, TokenId};

/// Most entries (budget × automaton states × hidden states) the backward table may hold.
pub const MAX_TABLE_ENTRIES: usize = 1 << 24;

/// The P-GCD guide: an HMM multiplied with a tensorized automaton, for budgets up to
/// `max_remaining` tokens.
#[derive(Clone, Debug)]
pub struct Guide {
    hmm: Hmm,
    /// Emissions transposed, V×H: `emission_t[v * H + h]` = B[h, v].
    emission_t: Vec<f64>,
    tensor: TensorizedAutomaton,
    max_remaining: usize,
    /// log C_k(h, s) at `(k * S + s) * H + h`, k = 0..max_remaining.
    log_c: Vec<f64>,
    floor: f64,
    /// Test-only mutant: weight by the mask mass instead of dividing by the guide factor.
    #[cfg(test)]
    pub(crate) mutant: bool,
}

/// One token the guide allows after a prefix, with its satisfiability probability.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GuidedToken {
    /// The token.
    pub token: TokenId,
    /// log g(token): the HMM's log probability that the constraint is satisfied within
    /// the budget given the prefix and this token (−∞ where the HMM gives it none).
    pub log_sat: f64,
}

/// Refuses a guide table over [`MAX_TABLE_ENTRIES`]; callers check it before distilling
/// the HMM too, so that a table too large is refused before that work, not after.
pub fn check_table_size(
    max_remaining: usize,
    automaton_states: usize,
    hidden_states: usize,
) -> Result<(), SampleError> {
    let entries = max_remaining
        .saturating_mul(automaton_states)
        .saturating_mul(hidden_states);
    if entries > MAX_TABLE_ENTRIES {
        return Err(SampleError::Unsupported(format!(
            "the P-GCD table would hold {entries} entries ({max_remaining} tokens × \
             {automaton_states} automaton states × {hidden_states} hidden states), more than \
             {MAX_TABLE_ENTRIES}; lower --max-tokens or the HMM's hidden states"
        )));
    }
    Ok(())
}

/// Rejects a guide the inputs cannot make: a vocabulary mismatch, a zero budget, a floor
/// outside (0, 1], a table over [`MAX_TABLE_ENTRIES`].
fn validate(
    hmm: &Hmm,
    tensor: &TensorizedAutomaton,
    max_remaining: usize,
    floor: f64,
) -> Result<(), SampleError> {
    let bad = |m: String| Err(SampleError::Unsupported(m));
    if hmm.vocab != tensor.vocab_size {
        return bad(format!(
            "the HMM has {} tokens but the constraint's automaton {}",
            hmm.vocab, tensor.vocab_size
        ));
    }
    if max_remaining == 0 {
        return bad("the P-GCD guide needs a token budget of at least 1".into());
    }
    if !(floor > 0.0 && floor <= 1.0) {
        return bad(format!("the guide floor must be in (0, 1], not {floor}"));
    }
    check_table_size(max_remaining, tensor.num_states, hmm.hidden)
}

/// The backward table log C_k(h, s) at `(k * S + s) * H + h`, k < `max_remaining`, in f64
/// (the reference [`super::CpuHmm`] gives out; the inputs are validated by the caller).
pub(super) fn backward_table(
    hmm: &Hmm,
    tensor: &TensorizedAutomaton,
    max_remaining: usize,
) -> Vec<f64> {
    let (h, s_n, v_n) = (hmm.hidden, tensor.num_states, hmm.vocab);
    // log E[h, e]: the emission mass of each edge's tokens.
    let e_n = tensor.num_edges();
    let mut log_e = vec![0.0; e_n * h];
    for e in 0..e_n {
        let mut mass = vec![0.0; h];
        for v in tensor.edge_tokens(e) {
            for (hs, m) in mass.iter_mut().enumerate() {
                *m += hmm.emission[hs * v_n + v];
            }
        }
        for (l, m) in log_e[e * h..(e + 1) * h].iter_mut().zip(mass) {
            *l = m.ln();
        }
    }
    let log_a: Vec<f64> = hmm.transition.iter().map(|a| a.ln()).collect();
    let fin = tensor.final_state as usize;
    // log G_0 then, for each k, log C_k from log G_k and log G_{k+1} from log C_k.
    let mut log_g: Vec<f64> = (0..s_n * h)
        .map(|i| if i / h == fin { 0.0 } else { f64::NEG_INFINITY })
        .collect();
    let mut log_c = vec![f64::NEG_INFINITY; max_remaining * s_n * h];
    for k in 0..max_remaining {
        let c_k = &mut log_c[k * s_n * h..(k + 1) * s_n * h];
        for s in 0..s_n {
            let g_s = &log_g[s * h..(s + 1) * h];
            if g_s.iter().all(|&x| x == f64::NEG_INFINITY) {
                continue;
            }
            for hs in 0..h {
                c_k[s * h + hs] = logsumexp((0..h).map(|h2| log_a[hs * h + h2] + g_s[h2]));
            }
        }
        let mut next = vec![f64::NEG_INFINITY; s_n * h];
        for s in 0..s_n {
            if s == fin {
                next[s * h..(s + 1) * h].iter_mut().for_each(|x| *x = 0.0);
                continue;
            }
            let (lo, hi) = (
                tensor.out_start[s] as usize,
                tensor.out_start[s + 1] as usize,
            );
            for hs in 0..h {
                next[s * h + hs] = logsumexp((lo..hi).map(|e| {
                    let d = tensor.edge_dst[e] as usize;
                    let tail = if d == fin { 0.0 } else { c_k[d * h + hs] };
                    log_e[e * h + hs] + tail
                }));
            }
        }
        log_g = next;
    }
    log_c
}

impl Guide {
    /// Multiplies `hmm` with `tensor` for budgets up to `max_remaining` tokens; `floor`
    /// (in (0, 1]) is the least relative guide value an allowed token keeps. The backward
    /// table is computed here on the CPU ([`super::CpuHmm`]).
    pub fn new(
        hmm: Hmm,
        tensor: &TensorizedAutomaton,
        max_remaining: usize,
        floor: f64,
    ) -> Result<Self, SampleError> {
        validate(&hmm, tensor, max_remaining, floor)?;
        let log_c = backward_table(&hmm, tensor, max_remaining);
        Self::with_table(hmm, tensor, max_remaining, floor, log_c)
    }

    /// [`Guide::new`] with a backward table computed elsewhere (an [`super::HmmEngine`]):
    /// `log_c` must hold log C_k(h, s) at `(k * S + s) * H + h` for k < `max_remaining`.
    pub fn with_table(
        hmm: Hmm,
        tensor: &TensorizedAutomaton,
        max_remaining: usize,
        floor: f64,
        log_c: Vec<f64>,
    ) -> Result<Self, SampleError> {
        validate(&hmm, tensor, max_remaining, floor)?;
        let (h, v_n) = (hmm.hidden, hmm.vocab);
        let want = max_remaining * tensor.num_states * h;
        if log_c.len() != want || log_c.iter().any(|x| x.is_nan() || *x > 1e-3) {
            return Err(SampleError::Unsupported(format!(
                "the P-GCD backward table is malformed ({} entries, {want} expected, or an \
                 entry is NaN or a log-probability above 0)",
                log_c.len()
            )));
        }
        let mut emission_t = vec![0.0; v_n * h];
        for hs in 0..h {
            for v in 0..v_n {
                emission_t[v * h + hs] = hmm.emission[hs * v_n + v];
            }
        }
        Ok(Guide {
            hmm,
            emission_t,
            tensor: tensor.clone(),
            max_remaining,
            log_c,
            floor,
            #[cfg(test)]
            mutant: false,
        })
    }

    /// The HMM inside.
    pub fn hmm(&self) -> &Hmm {
        &self.hmm
    }

    /// Bytes the guide's tables take (emissions twice, the backward table, the automaton).
    pub fn bytes(&self) -> usize {
        self.hmm.bytes() + (self.emission_t.len() + self.log_c.len()) * 8 + self.tensor.bf_bytes()
    }

    /// The belief before any token: the HMM's initial distribution.
    pub fn initial_belief(&self) -> Vec<f64> {
        self.hmm.initial.clone()
    }

    /// The belief after token `v` (kept as it was when the HMM gives `v` no probability:
    /// any belief keeps the SMC weights exact).
    pub fn advance_belief(&self, belief: &[f64], v: TokenId) -> Vec<f64> {
        self.hmm
            .advance_belief(belief, v)
            .unwrap_or_else(|| belief.to_vec())
    }

    /// log C_k(·, s) for the hidden states, or `None` when `k` is beyond the table.
    fn log_c(&self, k: usize, s: usize) -> Option<&[f64]> {
        let (h, s_n) = (self.hmm.hidden, self.tensor.num_states);
        (k < self.max_remaining && s < s_n).then(|| &self.log_c[(k * s_n + s) * h..][..h])
    }

    /// Every token the budget allows after a prefix in automaton state `state` with belief
    /// `belief` and `remaining` tokens left (counting the next token and the EOS), each with
    /// log g(token). Empty when nothing can complete in time.
    pub fn allowed(&self, belief: &[f64], state: u32, remaining: usize) -> Vec<GuidedToken> {
        let t = &self.tensor;
        let (s, h, fin) = (state as usize, self.hmm.hidden, t.final_state as usize);
        let mut out = Vec::new();
        if remaining == 0 || s + 1 >= t.out_start.len() {
            return out;
        }
        let k = (remaining - 1).min(self.max_remaining.saturating_sub(1));
        for e in t.out_start[s] as usize..t.out_start[s + 1] as usize {
            let d = t.edge_dst[e] as usize;
            let reach = (t.dist[d] as usize) < remaining;
            if !reach {
                continue;
            }
            // Shifted C_{r−1}(·, d) so that its largest entry is 1.
            let (shift, scaled) = if d == fin {
                (0.0, vec![1.0; h])
            } else {
                match self.log_c(k, d) {
                    Some(c) => {
                        let m = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        (m, c.iter().map(|x| (x - m).exp()).collect())
                    }
                    None => continue,
                }
            };
            for v in t.edge_tokens(e) {
                let log_sat = if d == fin {
                    0.0
                } else {
                    let bv = &self.emission_t[v * h..(v + 1) * h];
                    let (mut num, mut den) = (0.0, 0.0);
                    for ((a, b), c) in belief.iter().zip(bv).zip(&scaled) {
                        den += a * b;
                        num += a * b * c;
                    }
                    if den > 0.0 && num > 0.0 {
                        shift + (num / den).ln()
                    } else {
                        f64::NEG_INFINITY
                    }
                };
                out.push(GuidedToken {
                    token: v as TokenId,
                    log_sat,
                });
            }
        }
        out
    }

    /// P_HMM(the constraint is satisfied within `remaining` tokens | belief, state): the
    /// guide's estimate before the next token, Σ_v P_HMM(v | belief)·g(v).
    pub fn satisfiable(&self, belief: &[f64], state: u32, remaining: usize) -> f64 {
        self.allowed(belief, state, remaining)
            .iter()
            .map(|g| {
                let pv: f64 = belief
                    .iter()
                    .enumerate()
                    .map(|(h, a)| a * self.hmm.b(h, g.token))
                    .sum();
                pv * g.log_sat.exp()
            })
            .sum()
    }

    /// The P-GCD proposal after a prefix (belief, automaton state, `remaining` tokens):
    /// unnormalized q(v) = P_LM(v)·g̃(v) over the budget mask, given the LM's next-token
    /// probabilities `probs`; [`Guide::weight`] gives a drawn token's SMC weight.
    pub fn proposal(
        &self,
        probs: &[f64],
        belief: &[f64],
        state: u32,
        remaining: usize,
    ) -> Proposal {
        let allowed = self.allowed(belief, state, remaining);
        let max = allowed
            .iter()
            .map(|g| g.log_sat)
            .fold(f64::NEG_INFINITY, f64::max);
        let mut guide = vec![0.0; probs.len()];
        let mut mask_mass = 0.0;
        for g in &allowed {
            let Some(p) = probs.get(g.token as usize) else {
                continue;
            };
            // All-zero guide (an HMM with zeros): fall back to the plain budget mask.
            let rel = if max.is_finite() {
                (g.log_sat - max).exp().max(self.floor)
            } else {
                1.0
            };
            guide[g.token as usize] = rel;
            mask_mass += p;
        }
        let weights: Vec<f64> = probs.iter().zip(&guide).map(|(p, g)| p * g).collect();
        let total = weights.iter().sum();
        Proposal {
            weights,
            guide,
            total,
            mask_mass,
        }
    }

    /// The incremental SMC weight of drawing `token` from `proposal`:
    /// P_LM(v)/q(v) = Σ_v' P_LM(v')·g̃(v') / g̃(v).
    pub fn weight(&self, proposal: &Proposal, token: TokenId) -> f64 {
        #[cfg(test)]
        if self.mutant {
            return proposal.mask_mass;
        }
        proposal.total / proposal.guide[token as usize]
    }
}

/// The P-GCD proposal after one prefix.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// Unnormalized q over the vocabulary: P_LM(v)·g̃(v) on allowed tokens, 0 elsewhere.
    pub weights: Vec<f64>,
    /// g̃(v) (relative, floored) on allowed tokens, 0 elsewhere.
    pub guide: Vec<f64>,
    /// Σ weights (0 when no allowed token has model probability).
    pub total: f64,
    /// The LM's mass on the allowed tokens (what `smc-gcd` would weigh by).
    pub mask_mass: f64,
}
