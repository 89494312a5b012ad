//! [`RmsNorm`]: `x / sqrt(mean(x²) + eps) · g` per token; [`rms_norm_reference`] on the CPU.

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::step;

/// The RMSNorm kernel.
#[derive(Debug)]
pub struct RmsNorm {
    pipeline: wgpu::ComputePipeline,
}

impl RmsNorm {
    /// Compiles the kernel.
    pub async fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        let src = format!("{}\n{}", step::WGSL, include_str!("wgsl/rms_norm.wgsl"));
        Ok(RmsNorm {
            pipeline: gpu.pipeline("rms_norm", &src).await?,
        })
    }

    /// The uniform for rows of width `d` and epsilon `eps`.
    pub fn dims(gpu: &Gpu, d: usize, eps: f32) -> wgpu::Buffer {
        gpu.uniform("rms_norm dims", &[d as u32, eps.to_bits(), 0, 0])
    }

    /// Binds input rows, the weight `g` (`d` floats), output rows, dims and step.
    pub fn bind(
        &self,
        gpu: &Gpu,
        x: &wgpu::Buffer,
        g: &wgpu::Buffer,
        out: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[x, g, out, dims, step])
    }

    /// Records the norm of `tokens` rows.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        tokens: usize,
    ) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(pass, "rms_norm", tokens as u32, 1, 1);
    }
}

/// CPU reference (mean of squares in f64, as `lm`'s CPU forward).
pub fn rms_norm_reference(x: &[f32], g: &[f32], eps: f32) -> Vec<f32> {
    let d = g.len();
    let mut out = vec![0f32; x.len()];
    for (xr, or) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
        let ms = xr.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / d as f64;
        let scale = (1.0 / (ms + eps as f64).sqrt()) as f32;
        for ((o, &v), &w) in or.iter_mut().zip(xr).zip(g) {
            *o = v * scale * w;
        }
    }
    out
}
