//! The llama forward pass on the GPU (WebGPU in the page, Vulkan natively) with the
//! `shaders` kernels: weights uploaded as their quantized blocks, a GPU KV cache,
//! logits read back asynchronously. [`crate::forward`] is the reference it is tested
//! against.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use lm::gpu::{GpuModel, GpuPromptedModel};
//! use sampler_core::LanguageModel;
//! let model = lm::Model::load("assets/models/SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! let gpu_model = GpuModel::new(&model).await?;
//! let prompt = model.tokenizer().encode_prompt("Name a colour.", true)?;
//! let mut lm = GpuPromptedModel::new(gpu_model, prompt)?;
//! let logprobs = lm.logprobs(&[]).await?;
//! # Ok(()) }
//! ```

mod kernels;
mod masked_decode;
mod model;
mod options;
pub(crate) mod tensors;

pub use masked_decode::{
    DecodeMask, DecodedToken, Decoding, MaskedDecoder, masked_decode_reference,
};
pub use model::{DEFAULT_GPU_CONTEXT, DEFAULT_GPU_SLOTS, GPU_CACHE_BUDGET, GpuModel};
pub use options::GpuOptions;
/// A [`GpuModel`] conditioned on a prompt: the engines' one prompted model.
pub type GpuPromptedModel = crate::engine::Prompted<GpuModel>;
pub use shaders::{Gpu, GpuError};
