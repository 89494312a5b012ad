//! WGSL compute kernels on wgpu, each with a CPU reference: quantized matrix-vector
//! products on raw GGUF blocks (Q4_1, Q8_0, Q5_0, Q5_1, Q2_K–Q6_K, f16, bf16, f32) — plain, or
//! fused with the RMSNorm before them and the bias, RoPE, cache write or SwiGLU after them —
//! the embedding lookup, RMSNorm, RoPE,
//! bias addition, per-head RMSNorm, grouped-query attention, SwiGLU, the token-mask kernel of the tensorized automaton, and
//! masked sampling on the GPU (log Z, a draw from the masked softmax and its logit, 20 bytes
//! read back).
//!
//! # Key types
//! - [`Gpu`]: adapter, device and queue (WebGPU on wasm32, Vulkan natively), buffer
//!   helpers, asynchronous read-back ([`Gpu::read_f32`]), lost-device tracking.
//! - Kernels: [`MatVec`], [`GetRows`], [`RmsNorm`], [`HeadNorm`], [`Rope`], [`Bias`], [`Attention`], [`SwiGlu`],
//!   [`TokenMask`], [`MaskedSample`]; each is compiled once (`new(&gpu).await`), bound to buffers
//!   (`bind`), and recorded into a compute pass (`dispatch`). They read a shared [`Step`]
//!   uniform (tokens of the run, cached positions).
//!
//! # Usage
//! ```no_run
//! # async fn demo() -> Result<(), shaders::GpuError> {
//! let gpu = shaders::Gpu::new().await?;
//! let kernel = shaders::TokenMask::new(&gpu).await?;
//! let mask = kernel.compute(&gpu, &[1, 0], &[0b01, 0b10], 1).await?;
//! assert_eq!(mask, [0b01]);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod attention;
mod bias;
mod buffers;
mod dispatches;
mod error;
mod format;
mod gpu;
mod head_norm;
mod kv_format;
mod masked_sample;
mod matvec;
mod oneshot;
mod profile;
mod readback;
mod rms_norm;
mod rope;
mod step;
mod swiglu;
mod token_mask;

pub use attention::{
    Attention, AttentionOutput, AttentionShape, attention_reference, attention_shares_reference,
};
pub use bias::{Bias, bias_reference};
pub use buffers::{f32_bytes, u32_bytes};
pub use dispatches::dispatches;
pub use error::GpuError;
pub use format::WeightFormat;
pub use gpu::Gpu;
pub use head_norm::{HeadNorm, head_norm_reference};
pub use kv_format::KvFormat;
pub use masked_sample::{MaskedDraw, MaskedSample, MaskedSampleBinding, masked_sample_reference};
pub use matvec::{
    GetRows, MatVec, MatVecBindings, MatVecInput, MatVecMode, MatVecOutput, MatVecStrategy,
    matvec_reference,
};
pub use profile::KernelTime;
pub use rms_norm::{RmsNorm, rms_norm_reference};
pub use rope::{Rope, rope_reference, rope_table};
pub use step::{Place, STEP_TOKENS, Step};
pub use swiglu::{SwiGlu, swiglu_reference};
pub use token_mask::{TokenMask, mask_words, token_mask_reference};
pub use wgpu;
