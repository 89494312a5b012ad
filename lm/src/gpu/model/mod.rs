//! [`GpuModel`]: the llama forward pass on the GPU with a GPU KV cache; weights stay in
//! their quantized blocks and logits are read back asynchronously.
//!
//! The model in parts: `upload` (a block's weights as uploaded, and the product kernels
//! it needs), `activations` (the buffers a pass writes), `block` (a block bound to its
//! buffers, and its dispatches), `build` ([`GpuModel::with_options`]: upload, compile,
//! bind) and `forward` (the passes); here the model's state, its caches' bookkeeping and
//! the [`crate::engine::Engine`] seam.

mod activations;
mod block;
mod build;
mod forward;
mod upload;

use crate::config::LlamaConfig;
use crate::gpu::kernels::Kernels;
use crate::gpu::options::GpuOptions;
use crate::model::Model;
use activations::Activations;
use block::{Block, Product};
use sampler_core::{LmError, TokenId};
use shaders::{Gpu, GpuError, KvFormat, wgpu};
use std::sync::Arc;

/// Positions the KV cache holds when no other limit is given (or the model's context, if
/// smaller).
pub const DEFAULT_GPU_CONTEXT: usize = 2048;
/// KV caches ("slots") the command line gives a GPU model: up to this many SMC particles
/// (the default count) or rejection candidates run in one pass
/// ([`GpuModel::forward_slots`]).
pub const DEFAULT_GPU_SLOTS: usize = 8;
/// Most bytes of KV cache [`GpuModel::with_slots`] allocates: it holds fewer slots (at
/// least one) where as many as asked would take more (SmolLM2-135M: 94 MB a slot of 2,048
/// positions in f32, so 8 fit; 47 MB in f16).
pub const GPU_CACHE_BUDGET: u64 = 1 << 30;

/// A llama model on the GPU: quantized weights, KV caches ("slots") of up to `max_context`
/// positions each, and the compiled kernels.
///
/// Slot `s` is rows `s · max_context ..` of every layer's cache buffers. One-sequence
/// calls ([`GpuModel::forward`], [`GpuModel::forward_resident`]) use slot 0;
/// [`GpuModel::forward_slots`] runs the new tokens of several slots in one pass, each
/// token attending to its own slot's rows.
pub struct GpuModel {
    gpu: Arc<Gpu>,
    config: LlamaConfig,
    eos: TokenId,
    max_ctx: usize,
    kernels: Kernels,
    act: Activations,
    blocks: Vec<Block>,
    embd: wgpu::BindGroup,
    head: Product,
    /// Each layer's k and v cache buffers (all slots).
    caches: Vec<[wgpu::Buffer; 2]>,
    /// How the caches store keys and values.
    kv: KvFormat,
    /// One slot's rows of one cache buffer, where there are several slots: a copy between
    /// slots goes through it (WebGPU copies nothing within one buffer).
    staging: Option<wgpu::Buffer>,
    /// Positions held in each slot.
    lens: Vec<usize>,
    weight_bytes: u64,
    buffer_bytes: u64,
}

impl std::fmt::Debug for GpuModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuModel")
            .field("adapter", &self.gpu.adapter_name())
            .field("max_context", &self.max_ctx)
            .field("slots", &self.lens.len())
            .field("kv_cache", &self.kv)
            .field("fold_output", &self.folds_output())
            .field("cached", &self.lens)
            .field("weight_bytes", &self.weight_bytes)
            .finish_non_exhaustive()
    }
}

impl GpuModel {
    /// Opens the GPU and uploads `model` with a cache of [`DEFAULT_GPU_CONTEXT`] positions
    /// (or the model's context, if smaller).
    // On wasm32 the WebGPU handles are not `Send`; the page is single-threaded, and one
    // `Arc` API on every target is simpler for callers than a per-target pointer type.
    #[cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]
    pub async fn new(model: &Model) -> Result<GpuModel, GpuError> {
        let gpu = Arc::new(Gpu::new().await?);
        GpuModel::with_gpu(gpu, model, DEFAULT_GPU_CONTEXT).await
    }

    /// Uploads `model` to `gpu` with a KV cache of `max_context` positions (at most the
    /// model's context).
    pub async fn with_gpu(
        gpu: Arc<Gpu>,
        model: &Model,
        max_context: usize,
    ) -> Result<GpuModel, GpuError> {
        GpuModel::with_slots(gpu, model, max_context, 1).await
    }

    /// Uploads `model` to `gpu` with `slots` KV caches of `max_context` positions each (at
    /// most the model's context): [`GpuModel::forward_slots`] runs up to that many
    /// sequences in one pass. It holds fewer (at least one) where `slots` caches would pass
    /// [`GPU_CACHE_BUDGET`] or a layer's cache buffer the adapter's largest storage binding
    /// ([`GpuModel::slots`] says how many). The caches hold f32: the logits then match
    /// the CPU forward pass within the bound the exact samplers rely on.
    pub async fn with_slots(
        gpu: Arc<Gpu>,
        model: &Model,
        max_context: usize,
        slots: usize,
    ) -> Result<GpuModel, GpuError> {
        GpuModel::with_options(gpu, model, max_context, slots, GpuOptions::default()).await
    }
}

impl GpuModel {
    /// The GPU context.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// The end-of-sequence token.
    pub fn eos(&self) -> TokenId {
        self.eos
    }

    /// How the KV caches store keys and values.
    pub fn kv_format(&self) -> KvFormat {
        self.kv
    }

    /// Whether each block's output product is folded into its attention (four dispatches a
    /// block; [`GpuOptions::fold_output`]).
    pub fn folds_output(&self) -> bool {
        self.act.attn.shares().is_some()
    }

    /// Positions the GPU KV cache can hold.
    pub fn max_context(&self) -> usize {
        self.max_ctx
    }

    /// Positions in the KV cache (slot 0).
    pub fn cache_len(&self) -> usize {
        self.lens[0]
    }

    /// Keeps the first `n` cached positions of slot 0 (no-op if it holds fewer).
    pub fn truncate(&mut self, n: usize) {
        self.truncate_slot(0, n)
    }

    /// KV caches held side by side ([`GpuModel::with_slots`]).
    pub fn slots(&self) -> usize {
        self.lens.len()
    }

    /// Positions in slot `slot` (0 past the last slot).
    pub fn slot_len(&self, slot: usize) -> usize {
        self.lens.get(slot).copied().unwrap_or(0)
    }

    /// Keeps the first `n` positions of slot `slot` (no-op if it holds fewer).
    pub fn truncate_slot(&mut self, slot: usize, n: usize) {
        if let Some(len) = self.lens.get_mut(slot) {
            *len = (*len).min(n);
        }
    }

    /// Makes slot `to` hold the first `n` positions of slot `from` (which must hold them):
    /// one submission copying each layer's key and value rows.
    pub fn copy_prefix(&mut self, from: usize, to: usize, n: usize) -> Result<(), LmError> {
        let slots = self.slots();
        if from >= slots || to >= slots {
            return Err(LmError(format!(
                "slot {} is outside the {slots} GPU KV caches",
                from.max(to)
            )));
        }
        if n > self.lens[from] {
            return Err(LmError(format!(
                "slot {from} holds {} positions, not the {n} to copy",
                self.lens[from]
            )));
        }
        if from == to {
            self.truncate_slot(to, n);
            return Ok(());
        }
        let Some(staging) = &self.staging else {
            return Err(LmError("one GPU KV cache: no slot to copy to".into()));
        };
        let row = self.kv.words(self.max_ctx * self.config.kv_dim());
        let len = self.kv.words(n * self.config.kv_dim());
        let copies: Vec<_> = self
            .caches
            .iter()
            .flatten()
            .flat_map(|b| {
                [
                    (b, from * row, staging, 0, len),
                    (staging, 0, b, to * row, len),
                ]
            })
            .collect();
        match self.gpu.copy_words(&copies) {
            Ok(()) => {
                self.lens[to] = n;
                Ok(())
            }
            Err(e) => {
                self.lens[to] = 0;
                Err(LmError(e.to_string()))
            }
        }
    }

    /// Bytes of the weight buffers (quantized blocks as in the file, norms as f32).
    pub fn weight_bytes(&self) -> u64 {
        self.weight_bytes
    }

    /// Bytes of all this model's GPU buffers: weights, KV cache, activations, scratch.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_bytes
    }
}

impl crate::engine::Engine for GpuModel {
    fn config(&self) -> &LlamaConfig {
        &self.config
    }

    fn eos(&self) -> TokenId {
        self.eos
    }

    fn max_context(&self) -> usize {
        self.max_ctx
    }

    fn context_name(&self) -> &'static str {
        "the GPU context"
    }

    fn check_device(&self) -> Result<(), String> {
        self.gpu.check().map_err(|e| e.to_string())
    }

    fn cached(&self) -> usize {
        self.lens[0]
    }

    fn truncate(&mut self, n: usize) {
        GpuModel::truncate(self, n)
    }

    fn slots(&self) -> usize {
        GpuModel::slots(self)
    }

    fn truncate_slot(&mut self, slot: usize, n: usize) {
        GpuModel::truncate_slot(self, slot, n)
    }

    fn copy_prefix(&mut self, from: usize, to: usize, n: usize) -> Result<(), LmError> {
        GpuModel::copy_prefix(self, from, to, n)
    }

    async fn forward_slots(
        &mut self,
        runs: &[(usize, &[TokenId])],
    ) -> Result<Vec<Vec<f32>>, LmError> {
        GpuModel::forward_slots(self, runs).await
    }

    async fn forward(
        &mut self,
        tokens: &[TokenId],
        logits_from: usize,
    ) -> Result<Vec<f32>, LmError> {
        GpuModel::forward(self, tokens, logits_from).await
    }
}
