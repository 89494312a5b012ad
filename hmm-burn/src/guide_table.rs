//! The P-GCD guide's backward table as a burn tensor program (the recursion is in
//! `sampler_core::hmm::Guide`'s documentation):
//!
//! - the emission mass of every automaton edge, E[e, h] = Σ_v Bf[e, v]·B[h, v], is one
//!   [edges, V] × [V, H] product with the edges' token sets as a dense 0/1 matrix (summed
//!   on the host instead when that matrix would pass [`MAX_DENSE_EDGE_TOKENS`]);
//! - then, for each budget k, log C_k = logsumexp over h' of log A[h, h'] + log G_k(s, h')
//!   on an [S, H, H] tensor, and log G_{k+1}(s) = logsumexp over s's outgoing edges of
//!   log E[e] + log C_k(dst(e)), the edges gathered into an [S, D, H] tensor padded to the
//!   largest out-degree D with an edge of mass 0.
//!
//! Everything stays in log space (the reference's own arithmetic), with a finite stand-in
//! for log 0, and the whole table is read back once. An automaton whose temporaries would
//! pass [`MAX_TEMPORARY`] elements gets the reference's table instead.

use burn_tensor::{Tensor, Transaction};
use sampler_core::hmm::Hmm;
use sampler_core::{SampleError, TensorizedAutomaton};

use crate::tensors::{Dev, NEG, NEG_READ, logsumexp, read_all, safe_log};

/// Largest dense edge × token matrix the program uploads, in elements (128 MB in f64);
/// beyond it the edges' emission masses are summed on the host from their token sets.
pub const MAX_DENSE_EDGE_TOKENS: usize = 1 << 24;

/// Largest [S, H, H] or [S, D, H] temporary the recursion makes, in elements; beyond it
/// the table is computed by the reference (`sampler_core::hmm::guide_table`).
pub const MAX_TEMPORARY: usize = 1 << 24;

/// log C_k(h, s) at `(k * S + s) * H + h` for k < `max_remaining` on `dev` (−∞ where the
/// final state cannot be reached), as `sampler_core::hmm::guide_table`.
pub(crate) async fn guide_table(
    dev: &Dev,
    hmm: &Hmm,
    tensor: &TensorizedAutomaton,
    max_remaining: usize,
) -> Result<Vec<f64>, SampleError> {
    guide_table_within(dev, hmm, tensor, max_remaining, Limits::DEFAULT).await
}

/// The sizes at which [`guide_table`] changes method (the tests lower them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Most edge × token entries uploaded as a dense matrix.
    pub dense: usize,
    /// Most elements of one temporary of the recursion.
    pub temporary: usize,
}

impl Limits {
    /// [`MAX_DENSE_EDGE_TOKENS`] and [`MAX_TEMPORARY`].
    pub const DEFAULT: Limits = Limits {
        dense: MAX_DENSE_EDGE_TOKENS,
        temporary: MAX_TEMPORARY,
    };
}

/// [`guide_table`] with the given size limits.
pub(crate) async fn guide_table_within(
    dev: &Dev,
    hmm: &Hmm,
    tensor: &TensorizedAutomaton,
    max_remaining: usize,
    limits: Limits,
) -> Result<Vec<f64>, SampleError> {
    let (h, v, s_n, e_n) = (hmm.hidden, hmm.vocab, tensor.num_states, tensor.num_edges());
    if v != tensor.vocab_size {
        return Err(SampleError::Unsupported(format!(
            "the HMM has {v} tokens but the constraint's automaton {}",
            tensor.vocab_size
        )));
    }
    if max_remaining == 0 || s_n == 0 {
        return Ok(Vec::new());
    }
    let fin = tensor.final_state as usize;
    let degree = (0..s_n)
        .map(|s| (tensor.out_start[s + 1] - tensor.out_start[s]) as usize)
        .max()
        .unwrap_or(0)
        .max(1);
    if s_n.saturating_mul(h).saturating_mul(h.max(degree)) > limits.temporary {
        return Ok(sampler_core::hmm::guide_table(hmm, tensor, max_remaining));
    }

    // log E[e, h], with one more edge of mass 0 for the padding.
    let mass = if e_n == 0 {
        None
    } else if e_n.saturating_mul(v) <= limits.dense {
        // One [edges, V] × [V, H] product, the edges' token sets as a 0/1 matrix.
        let mut dense = vec![0.0; e_n * v];
        for e in 0..e_n {
            tensor.edge_tokens(e).for_each(|t| dense[e * v + t] = 1.0);
        }
        let b = dev.floats(&hmm.emission, [h, v]);
        Some(dev.floats(&dense, [e_n, v]).matmul(b.transpose()))
    } else {
        let mut mass = vec![0.0; e_n * h];
        for e in 0..e_n {
            for t in tensor.edge_tokens(e) {
                for hs in 0..h {
                    mass[e * h + hs] += hmm.emission[hs * v + t];
                }
            }
        }
        Some(dev.floats(&mass, [e_n, h]))
    };
    let log_e = match mass {
        None => dev.full([1, h], NEG),
        Some(m) => Tensor::cat(vec![safe_log(m), dev.full([1, h], NEG)], 0),
    };
    let log_a = safe_log(dev.floats(&hmm.transition, [h, h])).unsqueeze_dim::<3>(0);

    // Each edge's destination, and whether it is the final state (its tail is log 1).
    let mut dst: Vec<usize> = tensor.edge_dst.iter().map(|&d| d as usize).collect();
    dst.push(fin);
    let not_final: Vec<f64> = dst.iter().map(|&d| f64::from(u8::from(d != fin))).collect();
    let dst = dev.indices(&dst);
    let not_final = dev.floats(&not_final, [e_n + 1, 1]);
    // Each state's outgoing edges, padded with the mass-0 edge `e_n`.
    let mut out_edges = vec![e_n; s_n * degree];
    for s in 0..s_n {
        for (i, e) in (tensor.out_start[s]..tensor.out_start[s + 1]).enumerate() {
            out_edges[s * degree + i] = e as usize;
        }
    }
    let out_edges = dev.indices(&out_edges);
    let mut is_final = vec![0.0; s_n];
    is_final[fin] = 1.0;
    let not_final_state = dev.floats(
        &is_final.iter().map(|f| 1.0 - f).collect::<Vec<_>>(),
        [s_n, 1],
    );

    // log G_0: 0 at the final state, log 0 elsewhere.
    let mut log_g = dev
        .floats(
            &is_final
                .iter()
                .map(|&f| if f > 0.0 { 0.0 } else { NEG })
                .collect::<Vec<_>>(),
            [s_n, 1],
        )
        .expand([s_n, h]);
    let mut tables = Vec::with_capacity(max_remaining);
    for _ in 0..max_remaining {
        // log C_k(s, h) = logsumexp_h' log A[h, h'] + log G_k(s, h').
        let log_c: Tensor<2> =
            logsumexp(log_a.clone() + log_g.unsqueeze_dim::<3>(1), 2).squeeze_dim(2);
        let tail = log_c.clone().select(0, dst.clone()) * not_final.clone();
        let per_edge = log_e.clone() + tail;
        let gathered = per_edge
            .select(0, out_edges.clone())
            .reshape([s_n, degree, h]);
        // The final state has no outgoing edge; its G is log 1.
        log_g = logsumexp(gathered, 1).squeeze_dim::<2>(1) * not_final_state.clone();
        tables.push(log_c);
    }
    let [table]: [Vec<f64>; 1] = read_all(Transaction::default().register(Tensor::cat(tables, 0)))
        .await?
        .try_into()
        .expect("one tensor was registered");
    Ok(table
        .into_iter()
        .map(|x| if x < NEG_READ { f64::NEG_INFINITY } else { x })
        .collect())
}
