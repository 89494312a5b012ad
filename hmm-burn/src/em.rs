//! One Baum–Welch iteration as a burn tensor program: the scaled forward–backward pass
//! over every training sequence at once (a batch of N sequences padded to the longest, one
//! [N, H] × [H, H] product per position), the expected counts gathered on the device (the
//! emission counts by one indexed add into a [U, H] tensor over the U distinct tokens of
//! the data, so the device never holds a vocabulary-sized tensor), and the M-step's
//! normalization on the CPU ([`Hmm::from_counts`], the reference's own).
//!
//! Padding: a position past a sequence's end emits with probability 1, so its forward
//! scale is Σ_j (α A)_j = 1 and its backward vector stays 1; masks keep it out of the counts
//! and the likelihood.

use burn_tensor::{IndexingUpdateOp, Tensor, Transaction};
use sampler_core::hmm::{EmStep, Hmm};
use sampler_core::{SampleError, TokenId};
use std::collections::HashMap;

use crate::tensors::{Dev, read_all};

/// One EM iteration of `hmm` on `data` with pseudo-count `pseudo` on `dev`: the updated
/// HMM and the objective before the update (as [`Hmm::em_step`], which computes the step
/// instead where a training sequence is impossible under `hmm`).
pub(crate) async fn em_step(
    dev: &Dev,
    hmm: &Hmm,
    data: &[Vec<TokenId>],
    pseudo: f64,
) -> Result<(Hmm, EmStep), SampleError> {
    let (h, v) = (hmm.hidden, hmm.vocab);
    // A token outside the vocabulary makes its sequence impossible: the reference's case.
    if data.iter().flatten().any(|&t| t as usize >= v) {
        return Ok(reference_step(hmm, data, pseudo));
    }
    let seqs: Vec<&Vec<TokenId>> = data.iter().filter(|s| !s.is_empty()).collect();
    let (n, t_len) = (seqs.len(), seqs.iter().map(|s| s.len()).max().unwrap_or(0));
    if n == 0 {
        // Nothing to count: the pseudo-counts alone.
        return Ok(reference_step(hmm, data, pseudo));
    }

    let a = dev.floats(&hmm.transition, [h, h]);
    // Only the tokens the data holds take part: B's columns for them, [U, H], go up, and
    // their expected counts, [U, H], come back (U ≤ the data's length, whatever V is).
    let mut compact: HashMap<TokenId, usize> = HashMap::new();
    let mut seen: Vec<usize> = Vec::new();
    for &t in data.iter().flatten() {
        compact.entry(t).or_insert_with(|| {
            seen.push(t as usize);
            seen.len() - 1
        });
    }
    let u = seen.len();
    let mut emission_seen = vec![0.0; u * h];
    for (k, &t) in seen.iter().enumerate() {
        for hs in 0..h {
            emission_seen[k * h + hs] = hmm.emission[hs * v + t];
        }
    }
    let bt = dev.floats(&emission_seen, [u, h]);

    // Per position: the tokens' compact ids (0 past the end), the mask [N, 1], B[·, x_t]
    // [N, H] (1 past the end).
    let mut tokens = Vec::with_capacity(t_len * n);
    let mut masks = Vec::with_capacity(t_len);
    let mut bx = Vec::with_capacity(t_len);
    for t in 0..t_len {
        let toks: Vec<usize> = seqs
            .iter()
            .map(|s| s.get(t).map_or(0, |x| compact[x]))
            .collect();
        let m: Vec<f64> = seqs
            .iter()
            .map(|s| f64::from(u8::from(t < s.len())))
            .collect();
        let m = dev.floats(&m, [n, 1]);
        let b = bt.clone().select(0, dev.indices(&toks));
        // b·m + (1 − m), not b·m − m + 1: in f32 the latter rounds b ≈ 1e-5 (a 49k-token
        // vocabulary) to within 1e-7 absolute, a 1% error.
        bx.push(b * m.clone() + (m.clone().neg() + 1.0));
        tokens.extend(toks);
        masks.push(m);
    }

    // Scaled forward: α_t sums to 1, scale_t = P(x_t | x_<t).
    let mut alphas: Vec<Tensor<2>> = Vec::with_capacity(t_len);
    let mut scales: Vec<Tensor<2>> = Vec::with_capacity(t_len);
    let mut prior = dev.floats(&hmm.initial, [1, h]).expand([n, h]);
    for b in &bx {
        let joint = prior * b.clone();
        let s = joint.clone().sum_dim(1);
        let alpha = joint / s.clone();
        prior = alpha.clone().matmul(a.clone());
        alphas.push(alpha);
        scales.push(s);
    }

    // Scaled backward, with the transition counts Σ_t α_tᵀ (B_{t+1} β_{t+1} / scale_{t+1}).
    let a_t = a.clone().transpose();
    let mut betas = vec![dev.full([n, h], 1.0); t_len];
    let mut xi = dev.full([h, h], 0.0);
    for t in (0..t_len - 1).rev() {
        let w = bx[t + 1].clone() * betas[t + 1].clone() / scales[t + 1].clone();
        xi = xi
            + alphas[t]
                .clone()
                .transpose()
                .matmul(w.clone() * masks[t + 1].clone());
        betas[t] = w.matmul(a_t.clone());
    }
    let transition = xi * a + pseudo;

    // State posteriors γ_t = α_t β_t (zero past the end), summed into the counts.
    let gammas: Vec<Tensor<2>> = (0..t_len)
        .map(|t| alphas[t].clone() * betas[t].clone() * masks[t].clone())
        .collect();
    let initial = gammas[0].clone().sum_dim(0) + pseudo;
    let emission_counts = dev.full([u, h], 0.0).select_assign(
        0,
        dev.indices(&tokens),
        Tensor::cat(gammas, 0),
        IndexingUpdateOp::Add,
    );
    let log_likelihood = Tensor::cat(
        scales
            .into_iter()
            .zip(&masks)
            .map(|(s, m)| s.log() * m.clone())
            .collect(),
        0,
    )
    .sum();

    let tx = Transaction::default()
        .register(initial)
        .register(transition)
        .register(emission_counts)
        .register(log_likelihood);
    let [initial, transition, counts, ll]: [Vec<f64>; 4] = read_all(tx)
        .await?
        .try_into()
        .expect("four tensors were registered");
    let log_likelihood = ll[0];
    // A sequence of probability 0 (a scale of 0) turns its α into 0/0 and spreads NaN
    // through the sums; the reference skips such a sequence's counts, so it computes this
    // step (rare: only where π, A or B have exact zeros).
    let finite = |x: &Vec<f64>| x.iter().all(|c| c.is_finite());
    if !log_likelihood.is_finite() || ![&initial, &transition, &counts].into_iter().all(finite) {
        return Ok(reference_step(hmm, data, pseudo));
    }
    let mut emission = vec![pseudo; h * v];
    for (k, &t) in seen.iter().enumerate() {
        for hs in 0..h {
            emission[hs * v + t] += counts[k * h + hs];
        }
    }
    let objective = log_likelihood + hmm.log_prior(pseudo);
    Ok((
        Hmm::from_counts(h, v, initial, transition, emission),
        EmStep {
            log_likelihood,
            objective,
        },
    ))
}

/// The reference's EM step (`Hmm::em_step`), for the inputs the tensor program leaves to
/// it: no data, a token outside the vocabulary, a training sequence of probability 0.
fn reference_step(hmm: &Hmm, data: &[Vec<TokenId>], pseudo: f64) -> (Hmm, EmStep) {
    let mut next = hmm.clone();
    let step = next.em_step(data, pseudo);
    (next, step)
}
