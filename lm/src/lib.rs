//! The model runtime: GGUF reader, tokenizer, chat template and llama forward pass.
//!
//! # Key types
//! - [`gguf::Gguf`]: a GGUF v2/v3 header parsed from a byte slice (metadata, tensor
//!   infos, checked data ranges), with the quantization blocks ([`gguf::BlockQ4_1`],
//!   [`gguf::BlockQ8_0`]) and their scalar dequantizers.
//! - [`Tokenizer`]: byte-level BPE from the GGUF metadata (the `tokenizers` crate), the
//!   chat template (minijinja), and the [`sampler_core::Vocabulary`] the samplers need.
//! - [`Model`]: a llama-architecture model in memory, weights still quantized; a CPU
//!   forward pass with a [`KvCache`]; [`Model::score`].
//! - [`shard::ShardFile`]: one worker's share of a model split by rows between the page's
//!   workers ([`Model::from_shard`] runs the lead's).
//! - [`PromptedModel`]: a model conditioned on a prompt, implementing
//!   [`sampler_core::LanguageModel`] with a KV cache reused by longest common prefix.
//! - [`gpu::GpuModel`] and [`gpu::GpuPromptedModel`]: the same forward pass on wgpu with
//!   our WGSL kernels (weights kept as the file's quantized blocks on the GPU, one WGSL decoder per GGUF type).
//! - [`Engine`]: the seam those forward passes share (their KV caches), [`Prompted`] the
//!   one prompted model over it, and [`Backend`]: a model on exactly one engine, lending
//!   a prompted model ([`Loan`]) for each run — what the CLI and the page hold.
//! - [`burn::BurnModel`] and [`burn::BurnPromptedModel`] (feature `burn`): the same forward
//!   pass as a burn tensor program, on burn's CPU backend or (feature `burn-wgpu`) its wgpu one.
//!
//! # Usage
//! ```no_run
//! use lm::{Model, PromptedModel};
//! use sampler_core::LanguageModel;
//! use std::sync::Arc;
//!
//! let model = Arc::new(Model::load("assets/models/SmolLM2-135M-Instruct.Q4_1.gguf")?);
//! let vocab = model.tokenizer().vocabulary();
//! let prompt = model.tokenizer().encode_prompt("Name a colour.", true)?;
//! let mut lm = PromptedModel::new(model.clone(), prompt)?;
//! let logprobs = sampler_core::block_on(lm.logprobs(&[]))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod backend;
#[cfg(feature = "burn")]
pub mod burn;
pub mod byte_level;
pub mod chat_template;
pub mod config;
pub mod engine;
pub mod error;
pub mod forward;
pub mod gguf;
pub mod gpu;
pub mod header;
mod kv_stash;
pub mod model;
pub mod page_memory;
mod prefix_reuse;
pub mod prompted;
pub mod shard;
mod slots;
pub mod tokenizer;

#[cfg(any(test, feature = "test-files"))]
mod test_gguf;

pub use backend::{Backend, Lender, Loan};
pub use config::LlamaConfig;
pub use engine::{CpuEngine, Engine, Prompted};
pub use error::LoadError;
pub use forward::{KvCache, NoPause, Pause};
pub use header::ModelHeader;
pub use model::Model;
pub use prompted::PromptedModel;

/// A tiny llama GGUF (d = 64, 2 blocks, vocabulary 8, about 24 KB) with deterministic
/// pseudo-random weights, that loads and runs: for tests and fuzz seeds.
#[cfg(feature = "test-files")]
pub fn tiny_llama_gguf() -> Vec<u8> {
    test_gguf::tiny_llama()
}

/// A tiny llama GGUF of width `d` (a multiple of 256 for K-quants) whose weight matrices
/// take the tensor types of `types` in turn: for tests of every type end to end.
#[cfg(feature = "test-files")]
pub fn tiny_llama_gguf_typed(d: u64, types: &[gguf::GgmlType]) -> Vec<u8> {
    test_gguf::tiny_llama_typed(d, types)
}

/// Two mixes of tensor types for [`tiny_llama_gguf_typed`] that between them hold every
/// type the engines read: for the every-type tests.
#[cfg(feature = "test-files")]
pub const EVERY_TYPE_MIXES: [&[gguf::GgmlType]; 2] = test_gguf::EVERY_TYPE_MIXES;

pub use tokenizer::{TokenType, Tokenizer};
