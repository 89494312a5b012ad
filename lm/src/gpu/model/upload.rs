//! A block's weights as uploaded ([`Raw`]), before the kernels are compiled and bound, and
//! which product kernels each block needs.

use crate::forward::weights::Layer;
use crate::gpu::kernels::ProductKind;
use crate::gpu::tensors::{self, GpuMatrix};
use shaders::{Gpu, GpuError, KvFormat, MatVecInput, MatVecOutput, wgpu};

/// A block's q, k and v matrices as uploaded.
pub(super) enum Qkv {
    Stacked(GpuMatrix),
    Separate([GpuMatrix; 3]),
}

/// A block's gate and up matrices as uploaded.
pub(super) enum GateUp {
    Stacked(GpuMatrix),
    Separate(GpuMatrix, GpuMatrix),
}

/// A block's weights as uploaded, before the kernels are compiled and bound.
pub(super) struct Raw {
    pub(super) attn_norm: wgpu::Buffer,
    pub(super) ffn_norm: wgpu::Buffer,
    /// Output and down.
    pub(super) m: [GpuMatrix; 2],
    pub(super) qkv: Qkv,
    pub(super) gate_up: GateUp,
    /// Biases of q, k and v where they get dispatches of their own (not fused), and of the
    /// output product.
    pub(super) b: [Option<wgpu::Buffer>; 4],
    /// q's, k's and v's biases stacked (zeros where one is missing), for the fused product.
    pub(super) qkv_bias: Option<wgpu::Buffer>,
    /// Per-head norm weights of q and k.
    pub(super) head_norm: [Option<wgpu::Buffer>; 2],
}

impl Raw {
    /// Uploads block `i`'s tensors `l` (the file's bytes `bytes`; q's width `q_dim`, k's
    /// and v's `kv`): q, k and v stacked into one matrix, and gate and up, where their
    /// types allow.
    pub(super) fn upload(
        gpu: &Gpu,
        l: &Layer,
        i: usize,
        bytes: &[u8],
        (q_dim, kv): (usize, usize),
    ) -> Result<Raw, GpuError> {
        let m = |m, what: &str| tensors::matrix(gpu, m, bytes, &format!("block {i} {what}"));
        let v = |v: &[f32], what: &str| tensors::vector(gpu, v, &format!("block {i} {what}"));
        let optional =
            |o: &Option<Vec<f32>>, what: &str| o.as_deref().map(|x| v(x, what)).transpose();
        let qkv = match tensors::stacked(
            gpu,
            &[&l.wq, &l.wk, &l.wv],
            bytes,
            &format!("block {i} q, k, v"),
        )? {
            Some(s) => Qkv::Stacked(s),
            None => Qkv::Separate([m(&l.wq, "q")?, m(&l.wk, "k")?, m(&l.wv, "v")?]),
        };
        let head_norm = [
            optional(&l.q_norm, "q norm")?,
            optional(&l.k_norm, "k norm")?,
        ];
        // The fused q/k/v product adds the three biases stacked (zeros where one is
        // missing); the other paths add each with its own dispatch.
        let fused = matches!(qkv, Qkv::Stacked(_)) && head_norm.iter().all(Option::is_none);
        let biases = [(&l.bq, q_dim), (&l.bk, kv), (&l.bv, kv)];
        let qkv_bias = match fused && biases.iter().any(|(b, _)| b.is_some()) {
            true => {
                let stacked: Vec<f32> = biases
                    .iter()
                    .flat_map(|(b, n)| b.as_deref().map_or_else(|| vec![0.0; *n], <[f32]>::to_vec))
                    .collect();
                Some(v(&stacked, "q, k, v biases")?)
            }
            false => None,
        };
        let separate = |b: &Option<Vec<f32>>, what: &str| match fused {
            true => Ok(None),
            false => optional(b, what),
        };
        Ok(Raw {
            attn_norm: v(&l.attn_norm, "attention norm")?,
            ffn_norm: v(&l.ffn_norm, "feed-forward norm")?,
            m: [m(&l.wo, "attention output")?, m(&l.down, "down")?],
            qkv,
            gate_up: match tensors::stacked(
                gpu,
                &[&l.gate, &l.up],
                bytes,
                &format!("block {i} gate, up"),
            )? {
                Some(s) => GateUp::Stacked(s),
                None => GateUp::Separate(m(&l.gate, "gate")?, m(&l.up, "up")?),
            },
            b: [
                separate(&l.bq, "q bias")?,
                separate(&l.bk, "k bias")?,
                separate(&l.bv, "v bias")?,
                optional(&l.bo, "output bias")?,
            ],
            qkv_bias,
            head_norm,
        })
    }

    /// Whether q, k and v can go through one product with bias and RoPE on the way out.
    pub(super) fn fuses_qkv(&self) -> bool {
        matches!(self.qkv, Qkv::Stacked(_)) && self.head_norm.iter().all(Option::is_none)
    }

    /// Whether the output product can fold into attention, its shares added by one
    /// gate/up product and by down (the heads' shape is the model's to check).
    pub(super) fn folds_output(&self) -> bool {
        matches!(self.gate_up, GateUp::Stacked(_)) && self.b[3].is_none()
    }

    /// The product kernels this block uses, with the output product folded into attention
    /// or not.
    pub(super) fn kinds(&self, kv: KvFormat, fold: bool) -> Vec<ProductKind> {
        use MatVecInput::{RmsNormed, RmsNormedPlusShares, Vectors};
        let mut k = match fold {
            true => vec![(self.m[1].format, Vectors, MatVecOutput::AddShares)],
            false => vec![
                (self.m[0].format, Vectors, MatVecOutput::One),
                (self.m[1].format, Vectors, MatVecOutput::One),
            ],
        };
        match &self.qkv {
            Qkv::Stacked(m) if self.fuses_qkv() => {
                k.push((m.format, RmsNormed, MatVecOutput::QkvRope(kv)))
            }
            Qkv::Stacked(m) => k.push((m.format, RmsNormed, MatVecOutput::Qkv)),
            Qkv::Separate(ms) => {
                k.extend(ms.iter().map(|m| (m.format, RmsNormed, MatVecOutput::One)))
            }
        }
        match &self.gate_up {
            GateUp::Stacked(m) if fold => {
                k.push((m.format, RmsNormedPlusShares, MatVecOutput::SwiGlu))
            }
            GateUp::Stacked(m) => k.push((m.format, RmsNormed, MatVecOutput::SwiGlu)),
            GateUp::Separate(g, u) => {
                k.extend([g, u].map(|m| (m.format, RmsNormed, MatVecOutput::One)))
            }
        }
        k
    }
}
