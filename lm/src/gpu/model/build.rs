//! [`GpuModel::with_options`]: uploads a model's weights, chooses the caches' format, the
//! slots and the fold the device and the model allow, compiles the kernels and binds them.

use super::activations::Activations;
use super::block::Binder;
use super::upload::{GateUp, Raw};
use super::{GPU_CACHE_BUDGET, GpuModel};
use crate::gpu::kernels::{Kernels, ProductKind};
use crate::gpu::options::GpuOptions;
use crate::gpu::tensors;
use crate::model::Model;
use shaders::{
    Attention, AttentionOutput, Gpu, GpuError, KvFormat, MatVec, MatVecInput, MatVecMode,
    MatVecOutput,
};
use std::sync::Arc;

impl GpuModel {
    /// As [`GpuModel::with_slots`], with what `options` asks for where the device and the
    /// model allow it. An f16 cache needs `shader-f16` and every block's q/k/v product
    /// fused (the separate bias, per-head norm and RoPE kernels work in f32), else the
    /// caches are f32 ([`GpuModel::kv_format`] says which); f16 halves the cache's memory
    /// and reads and moves SmolLM2's logits from the CPU's by up to 0.04 where f32 moves
    /// them 1e-4 (docs/bench/gpu-forward.md). The output product folds into attention
    /// where every block allows it ([`GpuOptions::fold_output`],
    /// [`GpuModel::folds_output`]).
    pub async fn with_options(
        gpu: Arc<Gpu>,
        model: &Model,
        max_context: usize,
        slots: usize,
        options: GpuOptions,
    ) -> Result<GpuModel, GpuError> {
        let c = model.config().clone();
        if let Some(shard) = model.shard() {
            return Err(GpuError::Shape(format!(
                "the model holds only share {} of {} of its rows: the GPU needs them all",
                shard.index, shard.of
            )));
        }
        let bytes = model.bytes();
        let max_ctx = max_context.min(c.context_length).max(1);
        let (d, q_dim, kv, ff) = (c.d_model, c.n_heads * c.head_dim, c.kv_dim(), c.d_ff);
        if d % 32 != 0 || q_dim % 32 != 0 || ff % 32 != 0 {
            return Err(GpuError::Shape(format!(
                "widths {d}, {q_dim}, {ff} must be multiples of 32 for the GPU kernels"
            )));
        }
        let start_bytes = gpu.allocated_bytes();
        let w = model.weights();
        let embd = tensors::matrix(&gpu, &w.embd, bytes, "embedding")?;
        let output = match w.output_tied {
            true => None,
            false => Some(tensors::matrix(&gpu, &w.output, bytes, "output")?),
        };
        let output_norm = tensors::vector(&gpu, &w.output_norm, "output norm")?;
        let raw = w
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| Raw::upload(&gpu, l, i, bytes, (q_dim, kv)))
            .collect::<Result<Vec<Raw>, GpuError>>()?;
        let weight_bytes = gpu.allocated_bytes() - start_bytes;
        // f16 caches where the device has them and every block writes its cache from the
        // fused q/k/v product; the element-wise kernels of the other paths (biases,
        // per-head norms, RoPE in the cache) read and write f32.
        // An even row width keeps every slot's and position's rows on whole 32-bit words
        // (the unit of the copies between slots).
        let f16 = options.cache == KvFormat::F16
            && gpu.has_f16()
            && raw.iter().all(Raw::fuses_qkv)
            && kv.is_multiple_of(2);
        let cache_format = match f16 {
            true => KvFormat::F16,
            false => KvFormat::F32,
        };
        // One slot's keys or values in one layer, and all of its keys and values.
        let layer_bytes = (max_ctx * kv * cache_format.bytes()) as u64;
        let slot_bytes = layer_bytes * 2 * c.n_layers as u64;
        let binding = gpu.limits().max_storage_buffer_binding_size;
        let slots = slots
            .min((GPU_CACHE_BUDGET / slot_bytes.max(1)) as usize)
            .min((binding / layer_bytes.max(1)) as usize)
            .max(1);
        // The output product folds into attention where every block allows it and the
        // heads' width does.
        let fold = options.fold_output
            && Attention::folds_heads(c.head_dim)
            && raw.iter().all(Raw::folds_output);
        let attentions: Vec<AttentionOutput> = match fold {
            true => raw
                .iter()
                .map(|r| AttentionOutput::Shares(r.m[0].format))
                .collect(),
            false => vec![AttentionOutput::Heads],
        };
        let head_m = output.as_ref().unwrap_or(&embd);
        let head_kind = (head_m.format, MatVecInput::RmsNormed, MatVecOutput::One);
        let mut kinds: Vec<ProductKind> = raw
            .iter()
            .flat_map(|r| r.kinds(cache_format, fold))
            .collect();
        kinds.push(head_kind);
        let kernels = Kernels::new(&gpu, &kinds, embd.format, (cache_format, &attentions)).await?;
        let separate_up = raw
            .iter()
            .any(|r| matches!(r.gate_up, GateUp::Separate(..)));
        let act = Activations::new(&gpu, &c, max_ctx, fold, separate_up)?;
        let binder = Binder::new(&gpu, &c, &kernels, &act, (max_ctx, cache_format))?;
        let mut blocks = Vec::with_capacity(c.n_layers);
        let mut caches = Vec::with_capacity(c.n_layers);
        for r in &raw {
            let kc = gpu.zeroed("k cache", cache_format.words(slots * max_ctx * kv))?;
            let vc = gpu.zeroed("v cache", cache_format.words(slots * max_ctx * kv))?;
            blocks.push(binder.block(r, (&kc, &vc))?);
            caches.push([kc, vc]);
        }
        let head = binder.head(head_kind, head_m, &output_norm)?;
        drop(binder);
        let staging = match slots > 1 {
            true => Some(gpu.zeroed("slot copy", cache_format.words(max_ctx * kv))?),
            false => None,
        };
        let embd_dims = MatVec::dims(&gpu, c.vocab_size, d, MatVecMode::Write)?;
        let embd_bind = kernels.get_rows.bind(
            &gpu,
            &embd.buffer,
            &act.tokens,
            &act.x,
            &embd_dims,
            &act.step,
        );
        gpu.check()?;
        let buffer_bytes = gpu.allocated_bytes() - start_bytes;
        Ok(GpuModel {
            config: c,
            eos: model.tokenizer().eos(),
            max_ctx,
            kernels,
            act,
            blocks,
            embd: embd_bind,
            head,
            caches,
            kv: cache_format,
            staging,
            lens: vec![0; slots],
            weight_bytes,
            buffer_bytes,
            gpu,
        })
    }
}
