//! [`SwiGlu`]: `silu(gate) · up` in place, for gate and up matrices stored in different
//! types (stacked ones go through [`crate::MatVecOutput::SwiGlu`]); [`swiglu_reference`]
//! on the CPU.

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::step;

/// The SwiGLU kernel.
#[derive(Debug)]
pub struct SwiGlu {
    pipeline: wgpu::ComputePipeline,
}

impl SwiGlu {
    /// Compiles the kernel.
    pub async fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        let src = format!("{}\n{}", step::WGSL, include_str!("wgsl/swiglu.wgsl"));
        Ok(SwiGlu {
            pipeline: gpu.pipeline("swiglu", &src).await?,
        })
    }

    /// The uniform for rows of `width` floats.
    pub fn dims(gpu: &Gpu, width: usize) -> wgpu::Buffer {
        gpu.uniform("swiglu dims", &[width as u32, 0, 0, 0])
    }

    /// Binds gate (overwritten), up, dims and step.
    pub fn bind(
        &self,
        gpu: &Gpu,
        gate: &wgpu::Buffer,
        up: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[gate, up, dims, step])
    }

    /// Records the kernel over `tokens` rows of `width`.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        width: usize,
        tokens: usize,
    ) {
        Self::record(pass, &self.pipeline, bind, width, tokens);
    }

    fn record(
        pass: &mut wgpu::ComputePass<'_>,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        width: usize,
        tokens: usize,
    ) {
        let groups = ((width * tokens) as u32).div_ceil(64).max(1);
        let x = groups.min(32768);
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(pass, "swiglu", x, groups.div_ceil(x), 1);
    }
}

/// CPU reference.
pub fn swiglu_reference(gate: &[f32], up: &[f32]) -> Vec<f32> {
    gate.iter()
        .zip(up)
        .map(|(&a, &b)| a / (1.0 + (-a).exp()) * b)
        .collect()
}
