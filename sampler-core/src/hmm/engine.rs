//! The seam where P-GCD's dense tensor work runs: the distillation's Baum–Welch steps and
//! the guide's backward table. [`CpuHmm`] is the plain-Rust reference in this crate; the
//! `hmm-burn` crate runs the same two programs as burn tensor programs on any burn device
//! (CPU, wgpu natively, WebGPU in the page).

use core::future::Future;
use core::pin::Pin;

use super::{EmStep, Hmm, guide};
use crate::{SampleError, TensorizedAutomaton, TokenId};

/// The future an [`HmmEngine`] returns (boxed so that engines can be chosen at run time).
pub type HmmFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SampleError>> + 'a>>;

/// Runs P-GCD's two tensor programs; every engine computes the same numbers as
/// [`CpuHmm`] up to its floating-point precision (an engine may hand the reference the
/// inputs its program does not cover, such as a training sequence of probability 0).
pub trait HmmEngine {
    /// A short name for messages and benchmarks (`cpu`, `burn-flex-f64`, `burn-wgpu-f32`).
    fn name(&self) -> String;

    /// One Baum–Welch iteration of `hmm` on `data` with Dirichlet pseudo-count `pseudo`:
    /// the updated HMM and the objective before the update (as [`Hmm::em_step`]).
    fn em_step<'a>(
        &'a self,
        hmm: &'a Hmm,
        data: &'a [Vec<TokenId>],
        pseudo: f64,
    ) -> HmmFuture<'a, (Hmm, EmStep)>;

    /// The guide's backward table log C_k(h, s) for k < `max_remaining`, at
    /// `(k * S + s) * H + h` (as [`guide_table`]).
    fn guide_table<'a>(
        &'a self,
        hmm: &'a Hmm,
        tensor: &'a TensorizedAutomaton,
        max_remaining: usize,
    ) -> HmmFuture<'a, Vec<f64>>;
}

/// The reference engine: this crate's f64 loops ([`Hmm::em_step`], [`guide_table`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuHmm;

impl HmmEngine for CpuHmm {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn em_step<'a>(
        &'a self,
        hmm: &'a Hmm,
        data: &'a [Vec<TokenId>],
        pseudo: f64,
    ) -> HmmFuture<'a, (Hmm, EmStep)> {
        Box::pin(async move {
            let mut next = hmm.clone();
            let step = next.em_step(data, pseudo);
            Ok((next, step))
        })
    }

    fn guide_table<'a>(
        &'a self,
        hmm: &'a Hmm,
        tensor: &'a TensorizedAutomaton,
        max_remaining: usize,
    ) -> HmmFuture<'a, Vec<f64>> {
        Box::pin(async move { Ok(guide_table(hmm, tensor, max_remaining)) })
    }
}

/// The guide's backward table on the CPU in f64: log C_k(h, s) at `(k * S + s) * H + h`
/// for k < `max_remaining` (−∞ where the final state cannot be reached). See
/// [`super::Guide`] for the recursion.
pub fn guide_table(hmm: &Hmm, tensor: &TensorizedAutomaton, max_remaining: usize) -> Vec<f64> {
    guide::backward_table(hmm, tensor, max_remaining)
}
