//! [`Attention`]: causal grouped-query attention over the KV cache;
//! [`attention_reference`] on the CPU.

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::kv_format::KvFormat;
use crate::step;

/// Shape of the attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    /// Query heads.
    pub n_heads: usize,
    /// Key/value heads (divides `n_heads`).
    pub n_kv_heads: usize,
    /// Width of a head.
    pub head_dim: usize,
    /// Positions one sequence's cache (a slot) and the scratch hold.
    pub max_ctx: usize,
}

impl AttentionShape {
    /// Floats of the scores scratch for `tokens` tokens per run.
    pub fn scratch_len(&self, tokens: usize) -> usize {
        tokens * self.n_heads * self.max_ctx
    }
}

/// The attention kernel.
#[derive(Debug)]
pub struct Attention {
    pipeline: wgpu::ComputePipeline,
}

impl Attention {
    /// Compiles the kernel for caches holding f32.
    pub async fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        Attention::with_cache(gpu, KvFormat::F32).await
    }

    /// Compiles the kernel for caches in format `kv`.
    pub async fn with_cache(gpu: &Gpu, kv: KvFormat) -> Result<Self, GpuError> {
        let src = format!(
            "{}{}\n{}",
            kv.wgsl(),
            step::WGSL,
            include_str!("wgsl/attention.wgsl")
        );
        Ok(Attention {
            pipeline: gpu.pipeline("attention", &src).await?,
        })
    }

    /// The uniform of a shape.
    pub fn dims(gpu: &Gpu, s: &AttentionShape) -> Result<wgpu::Buffer, GpuError> {
        if s.n_kv_heads == 0 || !s.n_heads.is_multiple_of(s.n_kv_heads) {
            return Err(GpuError::Shape(format!(
                "{} heads over {} key/value heads",
                s.n_heads, s.n_kv_heads
            )));
        }
        let scale = 1.0 / (s.head_dim as f32).sqrt();
        Ok(gpu.uniform(
            "attention dims",
            &[
                s.n_heads as u32,
                (s.n_heads / s.n_kv_heads) as u32,
                s.head_dim as u32,
                (s.n_kv_heads * s.head_dim) as u32,
                s.max_ctx as u32,
                scale.to_bits(),
                0,
                0,
            ],
        ))
    }

    /// Binds queries (`n × n_heads·head_dim`), key and value caches (rows of `kv_dim`:
    /// `max_ctx` for each sequence's slot, which the step's places locate), the scores
    /// scratch, the output, dims and step.
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        gpu: &Gpu,
        q: &wgpu::Buffer,
        k: &wgpu::Buffer,
        v: &wgpu::Buffer,
        scratch: &wgpu::Buffer,
        out: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[q, k, v, scratch, out, dims, step])
    }

    /// Records the attention of `tokens` tokens.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        n_heads: usize,
        tokens: usize,
    ) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(pass, "attention", n_heads as u32, tokens as u32, 1);
    }
}

/// CPU reference: attention of `n` new tokens (`q`: `n × n_heads·head_dim`) after
/// `n_past` cached positions (`k`, `v`: `(n_past + n) × kv_dim`).
pub fn attention_reference(
    s: &AttentionShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n_past: usize,
    n: usize,
) -> Vec<f32> {
    let hd = s.head_dim;
    let kv_dim = s.n_kv_heads * hd;
    let q_dim = s.n_heads * hd;
    let group = s.n_heads / s.n_kv_heads;
    let scale = 1.0 / (hd as f32).sqrt();
    let mut out = vec![0f32; n * q_dim];
    for t in 0..n {
        let visible = n_past + t + 1;
        for h in 0..s.n_heads {
            let g = h / group;
            let qh = &q[t * q_dim + h * hd..][..hd];
            let scores: Vec<f32> = (0..visible)
                .map(|j| {
                    let kj = &k[j * kv_dim + g * hd..][..hd];
                    qh.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>() * scale
                })
                .collect();
            let mx = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = scores.iter().map(|s| (s - mx).exp()).collect();
            let sum: f32 = e.iter().sum();
            let oh = &mut out[t * q_dim + h * hd..][..hd];
            for (j, p) in e.iter().enumerate() {
                for (o, vv) in oh.iter_mut().zip(&v[j * kv_dim + g * hd..][..hd]) {
                    *o += p / sum * vv;
                }
            }
        }
    }
    out
}
