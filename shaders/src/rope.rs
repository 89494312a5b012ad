//! [`Rope`]: rotary position embedding in llama.cpp's normal mode (adjacent pairs) or its
//! neox mode (pairs `(i, i + n_rot/2)`, qwen2), with the angle table computed in f64 on the
//! CPU ([`rope_table`]); [`rope_reference`].

use crate::error::GpuError;
use crate::gpu::Gpu;
use crate::step;

/// The RoPE kernel.
#[derive(Debug)]
pub struct Rope {
    pipeline: wgpu::ComputePipeline,
}

/// Cosines and sines for positions `0..positions`: `2 · freqs.len()` floats per position,
/// `(cos, sin)` of `pos · freqs[i]` for pair `i` (the model's per-pair angle per position).
pub fn rope_table(positions: usize, freqs: &[f64]) -> Vec<f32> {
    let mut t = Vec::with_capacity(positions * 2 * freqs.len());
    for pos in 0..positions {
        for &f in freqs {
            let theta = pos as f64 * f;
            t.push(theta.cos() as f32);
            t.push(theta.sin() as f32);
        }
    }
    t
}

/// The index pair RoPE turns for pair `i` of `n_rot` rotated dimensions.
fn pair(i: usize, n_rot: usize, halves: bool) -> (usize, usize) {
    if halves {
        (i, i + n_rot / 2)
    } else {
        (2 * i, 2 * i + 1)
    }
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
    /// rotated); `cache`: rows are the tokens' cache rows ([`crate::Place`]); `halves`:
    /// neox pairing.
    pub fn dims(
        gpu: &Gpu,
        width: usize,
        head_dim: usize,
        n_rot: usize,
        cache: bool,
        halves: bool,
    ) -> wgpu::Buffer {
        let mode = cache as u32 | (halves as u32) << 1;
        gpu.uniform(
            "rope dims",
            &[width as u32, head_dim as u32, n_rot as u32, mode],
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
        crate::dispatches::record(pass, "rope", pairs.div_ceil(64), tokens as u32, 1);
    }
}

/// CPU reference: rotates row `t` of `x` (rows of `width`) to position `pos0 + t`,
/// pairing as [`Rope::dims`]' `halves` says.
pub fn rope_reference(
    x: &mut [f32],
    width: usize,
    head_dim: usize,
    table: &[f32],
    n_rot: usize,
    pos0: usize,
    halves: bool,
) {
    for (t, row) in x.chunks_exact_mut(width).enumerate() {
        let angles = &table[(pos0 + t) * n_rot..][..n_rot];
        for head in row.chunks_exact_mut(head_dim) {
            for i in 0..n_rot / 2 {
                let (c, s) = (angles[2 * i], angles[2 * i + 1]);
                let (ia, ib) = pair(i, n_rot, halves);
                let (a, b) = (head[ia], head[ib]);
                head[ia] = a * c - b * s;
                head[ib] = a * s + b * c;
            }
        }
    }
}
