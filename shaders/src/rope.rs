//! [`Rope`]: rotary position embedding in llama.cpp's normal mode (adjacent pairs), with
//! the angle table computed in f64 on the CPU ([`rope_table`]); [`rope_reference`].

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::step;

/// The RoPE kernel.
#[derive(Debug)]
pub struct Rope {
    pipeline: wgpu::ComputePipeline,
}

/// Cosines and sines for positions `0..positions`: `n_rot` floats per position,
/// `(cos, sin)` of `pos · base^(-2i/n_rot)` for pair `i`.
pub fn rope_table(positions: usize, n_rot: usize, base: f32) -> Vec<f32> {
    let mut t = Vec::with_capacity(positions * n_rot);
    for pos in 0..positions {
        for i in 0..n_rot / 2 {
            let theta = pos as f64 * (base as f64).powf(-2.0 * i as f64 / n_rot as f64);
            t.push(theta.cos() as f32);
            t.push(theta.sin() as f32);
        }
    }
    t
}

impl Rope {
    /// Compiles the kernel.
    pub async fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        let src = format!("{}\n{}", step::WGSL, include_str!("wgsl/rope.wgsl"));
        Ok(Rope {
            pipeline: gpu.pipeline("rope", &src).await?,
        })
    }

    /// The uniform for rows of `width` floats (heads of `head_dim`, the first `n_rot`
    /// rotated); `cache`: rows start at `step.n_past`.
    pub fn dims(
        gpu: &Gpu,
        width: usize,
        head_dim: usize,
        n_rot: usize,
        cache: bool,
    ) -> wgpu::Buffer {
        gpu.uniform(
            "rope dims",
            &[width as u32, head_dim as u32, n_rot as u32, cache as u32],
        )
    }

    /// Binds the rows (rotated in place), the [`rope_table`] buffer, dims and step.
    pub fn bind(
        &self,
        gpu: &Gpu,
        v: &wgpu::Buffer,
        table: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[v, table, dims, step])
    }

    /// Records the rotation of `tokens` rows of `width / head_dim` heads.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        width: usize,
        head_dim: usize,
        n_rot: usize,
        tokens: usize,
    ) {
        let pairs = (width / head_dim * n_rot / 2) as u32;
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        pass.dispatch_workgroups(pairs.div_ceil(64), tokens as u32, 1);
    }
}

/// CPU reference: rotates row `t` of `x` (rows of `width`) to position `pos0 + t`.
pub fn rope_reference(
    x: &mut [f32],
    width: usize,
    head_dim: usize,
    table: &[f32],
    n_rot: usize,
    pos0: usize,
) {
    for (t, row) in x.chunks_exact_mut(width).enumerate() {
        let angles = &table[(pos0 + t) * n_rot..][..n_rot];
        for head in row.chunks_exact_mut(head_dim) {
            for i in 0..n_rot / 2 {
                let (c, s) = (angles[2 * i], angles[2 * i + 1]);
                let (a, b) = (head[2 * i], head[2 * i + 1]);
                head[2 * i] = a * c - b * s;
                head[2 * i + 1] = a * s + b * c;
            }
        }
    }
}
