//! [`HeadNorm`]: RMSNorm of each attention head of the run's rows, in place (qwen3 norms
//! every q and k head before RoPE); [`head_norm_reference`] on the CPU.

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::step;

/// The per-head RMSNorm kernel.
#[derive(Debug)]
pub struct HeadNorm {
    pipeline: wgpu::ComputePipeline,
}

impl HeadNorm {
    /// Compiles the kernel.
    pub async fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        let src = format!("{}\n{}", step::WGSL, include_str!("wgsl/head_norm.wgsl"));
        Ok(HeadNorm {
            pipeline: gpu.pipeline("head_norm", &src).await?,
        })
    }

    /// The uniform for rows of `heads` heads of `head_dim`, epsilon `eps`; `cache`: the
    /// run's rows are the tokens' cache rows ([`crate::Place`]).
    pub fn dims(gpu: &Gpu, head_dim: usize, heads: usize, eps: f32, cache: bool) -> wgpu::Buffer {
        gpu.uniform(
            "head_norm dims",
            &[head_dim as u32, eps.to_bits(), heads as u32, cache as u32],
        )
    }

    /// Binds the rows (normed in place), the weight `g` (`head_dim` floats), dims and step.
    pub fn bind(
        &self,
        gpu: &Gpu,
        v: &wgpu::Buffer,
        g: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[v, g, dims, step])
    }

    /// Records the norm of `heads` heads in each of `tokens` rows.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        heads: usize,
        tokens: usize,
    ) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(pass, "head_norm", heads as u32, tokens as u32, 1);
    }
}

/// CPU reference: every `g.len()`-wide head of `x` normed in place (mean of squares in
/// f64, as `lm`'s CPU forward).
pub fn head_norm_reference(x: &mut [f32], g: &[f32], eps: f32) {
    for head in x.chunks_exact_mut(g.len()) {
        let ms = head.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / g.len() as f64;
        let scale = (1.0 / (ms + eps as f64).sqrt()) as f32;
        for (v, &w) in head.iter_mut().zip(g) {
            *v = *v * scale * w;
        }
    }
}
