//! The activation buffers a forward pass writes and reads, sized for [`CHUNK`] tokens.

use crate::config::{LlamaConfig, RopeStyle};
use shaders::{Gpu, GpuError, MatVec, STEP_TOKENS, Step, f32_bytes, rope_table, wgpu};

/// Tokens run through the blocks in one submission; bounds the scratch buffers.
pub(super) const CHUNK: usize = 16;
const _: () = assert!(CHUNK <= STEP_TOKENS);

/// Activation buffers, sized for [`CHUNK`] tokens.
#[derive(Debug)]
pub(super) struct Activations {
    pub(super) x: wgpu::Buffer,
    pub(super) q: wgpu::Buffer,
    /// Where attention writes: the heads' results, or their shares of the output product.
    pub(super) attn: AttnOut,
    pub(super) gate: wgpu::Buffer,
    /// Up products, where some block keeps gate and up as separate matrices.
    pub(super) up: Option<wgpu::Buffer>,
    pub(super) logits: wgpu::Buffer,
    pub(super) tokens: wgpu::Buffer,
    pub(super) scratch: wgpu::Buffer,
    pub(super) step: wgpu::Buffer,
    pub(super) rope: wgpu::Buffer,
    /// The fused products' norm eps and RoPE shape ([`MatVec::fuse_dims`]).
    pub(super) fuse: wgpu::Buffer,
}

/// The buffer attention writes, sized for [`CHUNK`] tokens: one or the other, so a model
/// holds the shares exactly when its output products fold.
#[derive(Debug)]
pub(super) enum AttnOut {
    /// The heads' results, which the output product reads.
    Heads(wgpu::Buffer),
    /// Each token's heads' shares of the output product, where it is folded into
    /// attention.
    Shares(wgpu::Buffer),
}

impl AttnOut {
    /// The shares' buffer, where the output product folds.
    pub(super) fn shares(&self) -> Option<&wgpu::Buffer> {
        match self {
            AttnOut::Heads(_) => None,
            AttnOut::Shares(b) => Some(b),
        }
    }
}

impl Activations {
    /// Allocates the buffers for model `c` with a cache of `max_ctx` positions: the heads'
    /// shares where the output product folds (`fold`), the up products' buffer where a
    /// block keeps gate and up apart (`separate_up`).
    pub(super) fn new(
        gpu: &Gpu,
        c: &LlamaConfig,
        max_ctx: usize,
        fold: bool,
        separate_up: bool,
    ) -> Result<Self, GpuError> {
        let q_dim = c.n_heads * c.head_dim;
        let halves = c.rope_style == RopeStyle::Halves;
        Ok(Activations {
            x: gpu.zeroed("x", CHUNK * c.d_model)?,
            q: gpu.zeroed("q", CHUNK * q_dim)?,
            attn: match fold {
                true => AttnOut::Shares(gpu.zeroed("head shares", CHUNK * c.n_heads * c.d_model)?),
                false => AttnOut::Heads(gpu.zeroed("attn", CHUNK * q_dim)?),
            },
            gate: gpu.zeroed("gate", CHUNK * c.d_ff)?,
            up: match separate_up {
                true => Some(gpu.zeroed("up", CHUNK * c.d_ff)?),
                false => None,
            },
            logits: gpu.zeroed("logits", CHUNK * c.vocab_size)?,
            tokens: gpu.zeroed("tokens", CHUNK)?,
            scratch: gpu.zeroed("scores", CHUNK * c.n_heads * max_ctx)?,
            step: Step::default().buffer(gpu),
            rope: gpu.storage(
                "rope table",
                &f32_bytes(&rope_table(max_ctx, &c.rope_freqs)),
            )?,
            fuse: MatVec::fuse_dims(gpu, c.rms_eps, c.head_dim, c.n_rot, halves)?,
        })
    }
}
