//! [`Bias`]: adds a bias vector to each row of the run (qwen2's q/k/v biases), in place;
//! [`bias_reference`] on the CPU.

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::step;

/// The bias kernel.
#[derive(Debug)]
pub struct Bias {
    pipeline: wgpu::ComputePipeline,
}

impl Bias {
    /// Compiles the kernel.
    pub async fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        let src = format!("{}\n{}", step::WGSL, include_str!("wgsl/bias.wgsl"));
        Ok(Bias {
            pipeline: gpu.pipeline("bias", &src).await?,
        })
    }

    /// The uniform for rows of `width` floats; `cache`: the run's rows are the tokens'
    /// cache rows ([`crate::Place`]).
    pub fn dims(gpu: &Gpu, width: usize, cache: bool) -> wgpu::Buffer {
        gpu.uniform("bias dims", &[width as u32, cache as u32, 0, 0])
    }

    /// Binds the rows (added to in place), the bias, dims and step.
    pub fn bind(
        &self,
        gpu: &Gpu,
        v: &wgpu::Buffer,
        bias: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[v, bias, dims, step])
    }

    /// Records the addition over `tokens` rows of `width`.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        width: usize,
        tokens: usize,
    ) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(pass, "bias", (width as u32).div_ceil(64), tokens as u32, 1);
    }
}

/// CPU reference: adds `bias` to rows `pos0..` of `x` (rows of `bias.len()`).
pub fn bias_reference(x: &mut [f32], bias: &[f32], pos0: usize) {
    for row in x.chunks_exact_mut(bias.len()).skip(pos0) {
        for (v, &b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
}
