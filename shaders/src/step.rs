//! [`Step`]: the per-run uniform every forward kernel reads (tokens, cache length, first
//! token with logits).

use crate::gpu::Gpu;

/// Values of one run of the kernels; written to its uniform buffer before each submit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Step {
    /// Tokens in this run.
    pub n: u32,
    /// Positions already in the KV cache.
    pub n_past: u32,
    /// First token whose output-head row is computed.
    pub first: u32,
}

/// WGSL declaration of the `Step` struct, prepended to kernels that read it.
pub(crate) const WGSL: &str = include_str!("wgsl/step.wgsl");

impl Step {
    /// A uniform buffer holding this step.
    pub fn buffer(&self, gpu: &Gpu) -> wgpu::Buffer {
        gpu.uniform("step", &self.words())
    }

    /// Queues a write of this step into `buffer` (made by [`Step::buffer`]).
    pub fn write(&self, gpu: &Gpu, buffer: &wgpu::Buffer) {
        gpu.write_words(buffer, 0, &self.words());
    }

    fn words(&self) -> [u32; 4] {
        [self.n, self.n_past, self.first, 0]
    }
}
