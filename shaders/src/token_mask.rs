//! [`TokenMask`]: the token mask of the tensorized automaton, OR of the bitset rows of the
//! active edges; [`token_mask_reference`] is its CPU reference.

use crate::error::GpuError;
use crate::gpu::Gpu;

const MAX_X: u32 = 32768;

/// The token-mask kernel.
#[derive(Debug)]
pub struct TokenMask {
    pipeline: wgpu::ComputePipeline,
}

/// Words of a bitset over `vocab` tokens: `ceil(vocab / 32)`.
pub fn mask_words(vocab: usize) -> usize {
    vocab.div_ceil(32)
}

impl TokenMask {
    /// Compiles the kernel.
    pub async fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        Ok(TokenMask {
            pipeline: gpu
                .pipeline("token_mask", include_str!("wgsl/token_mask.wgsl"))
                .await?,
        })
    }

    /// The uniform for `edges` edges and bitsets of `words` words.
    pub fn dims(gpu: &Gpu, edges: usize, words: usize) -> wgpu::Buffer {
        gpu.uniform("token_mask dims", &[edges as u32, words as u32, 0, 0])
    }

    /// Binds `flags` (E words), `bf` (E × W words), `mask` (W words) and dims.
    pub fn bind(
        &self,
        gpu: &Gpu,
        flags: &wgpu::Buffer,
        bf: &wgpu::Buffer,
        mask: &wgpu::Buffer,
        dims: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[flags, bf, mask, dims])
    }

    /// Records the kernel for bitsets of `words` words.
    pub fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, bind: &wgpu::BindGroup, words: usize) {
        let groups = (words as u32).div_ceil(64).max(1);
        let x = groups.min(MAX_X);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(pass, "token_mask", x, groups.div_ceil(x), 1);
    }

    /// Uploads, runs and reads back in one call: the mask for `flags` over `bf`
    /// (`flags.len() × words` words).
    pub async fn compute(
        &self,
        gpu: &Gpu,
        flags: &[u32],
        bf: &[u32],
        words: usize,
    ) -> Result<Vec<u32>, GpuError> {
        if bf.len() != flags.len() * words {
            return Err(GpuError::Shape(format!(
                "{} bitset words for {} edges of {words} words",
                bf.len(),
                flags.len()
            )));
        }
        let fb = gpu.storage("flags", &crate::u32_bytes(flags))?;
        let bb = gpu.storage("bf", &crate::u32_bytes(bf))?;
        let mb = gpu.zeroed("mask", words)?;
        let dims = TokenMask::dims(gpu, flags.len(), words);
        let bind = self.bind(gpu, &fb, &bb, &mb, &dims);
        gpu.run(|pass| self.dispatch(pass, &bind, words))?;
        gpu.read_words(&mb, 0, words).await
    }
}

/// CPU reference: `mask[w] = OR_{e: flags[e] != 0} bf[e·W + w]`.
pub fn token_mask_reference(flags: &[u32], bf: &[u32], words: usize) -> Vec<u32> {
    let mut mask = vec![0u32; words];
    for (e, _) in flags.iter().enumerate().filter(|(_, f)| **f != 0) {
        for (m, &b) in mask.iter_mut().zip(&bf[e * words..(e + 1) * words]) {
            *m |= b;
        }
    }
    mask
}
