//! [`GpuModel`]: the llama forward pass on the GPU with a GPU KV cache; weights stay in
//! their quantized blocks and logits are read back asynchronously.

use super::kernels::{Kernels, ProductKind};
use super::options::GpuOptions;
use super::tensors::{self, GpuMatrix};
use crate::config::{LlamaConfig, RopeStyle};
use crate::model::Model;
use sampler_core::{LmError, TokenId};
use shaders::{
    Attention, AttentionOutput, AttentionShape, Bias, Gpu, GpuError, HeadNorm, KvFormat, MatVec,
    MatVecBindings, MatVecInput, MatVecMode, MatVecOutput, Place, Rope, STEP_TOKENS, Step, SwiGlu,
    f32_bytes, rope_table, wgpu,
};
use std::sync::Arc;

/// Tokens run through the blocks in one submission; bounds the scratch buffers.
const CHUNK: usize = 16;
const _: () = assert!(CHUNK <= STEP_TOKENS);
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

/// One matrix product bound to its buffers.
#[derive(Debug)]
struct Product {
    kind: ProductKind,
    rows: usize,
    bind: wgpu::BindGroup,
}

/// The bind groups of one transformer block, and its cache. The products fold in what they
/// can: each block's two RMSNorms (into the q/k/v and gate/up products), RoPE, the biases
/// and the cache write (into the stacked q/k/v product), SwiGLU (into the stacked gate/up
/// product) and the residual adds (the output and down products accumulate into `x`), so
/// a llama block is five dispatches, four with the output product folded into attention
/// ([`GpuOptions::fold_output`]); what a file's layout keeps apart runs on its own.
#[derive(Debug)]
struct Block {
    qkv: QkvIn,
    /// The q, k and v biases where the file has them and the product does not add them,
    /// with each one's row width.
    qkv_bias: Vec<(wgpu::BindGroup, usize)>,
    /// The per-head norms of q and k where the file has them (qwen3), with head counts.
    head_norms: Vec<(wgpu::BindGroup, usize)>,
    /// RoPE of q and of the new k rows, where the product does not turn them.
    rope: Option<[wgpu::BindGroup; 2]>,
    attention: AttentionOut,
    /// The output product's bias, added to `x` after it.
    out_bias: Option<wgpu::BindGroup>,
    ffn_in: FfnIn,
    down: Product,
}

/// A block's attention and output product.
#[derive(Debug)]
enum AttentionOut {
    /// Attention writing the heads' results, then the output product accumulating into
    /// `x`: two dispatches.
    Separate {
        attention: wgpu::BindGroup,
        wo: Product,
    },
    /// Attention writing each head's share of the output product (with the output
    /// matrix's format): one dispatch; the gate/up product and down add the shares.
    Folded(wgpu::BindGroup, AttentionOutput),
}

/// A block's feed-forward input products and SwiGLU (the norm folded into the products),
/// leaving `silu(gate) · up` in the `gate` activations.
#[derive(Debug)]
enum FfnIn {
    /// Gate and up stacked into one matrix: one product writing `silu(gate) · up`.
    Stacked(Product),
    /// Two products (the file stores the matrices in different types), then SwiGLU in
    /// place: three dispatches.
    Separate {
        gate: Product,
        up: Product,
        swiglu: wgpu::BindGroup,
    },
}

/// A block's q, k and v products (the norm folded in): q into the `q` activations, k and
/// v into the caches.
#[derive(Debug)]
enum QkvIn {
    /// The three matrices stacked, biases and RoPE applied on the way out: one dispatch
    /// ([`MatVecOutput::QkvRope`]).
    Fused(Product),
    /// The three matrices stacked, then the bias, head-norm and RoPE dispatches (qwen3's
    /// per-head norms come between the product and RoPE).
    Stacked(Product),
    /// Three products (the file stores the matrices in different types).
    Separate([Product; 3]),
}

/// A block's q, k and v matrices as uploaded.
enum Qkv {
    Stacked(GpuMatrix),
    Separate([GpuMatrix; 3]),
}

/// A block's gate and up matrices as uploaded.
enum GateUp {
    Stacked(GpuMatrix),
    Separate(GpuMatrix, GpuMatrix),
}

/// Activation buffers, sized for [`CHUNK`] tokens.
#[derive(Debug)]
struct Activations {
    x: wgpu::Buffer,
    q: wgpu::Buffer,
    /// Where attention writes: the heads' results, or their shares of the output product.
    attn: AttnOut,
    gate: wgpu::Buffer,
    /// Up products, where some block keeps gate and up as separate matrices.
    up: Option<wgpu::Buffer>,
    logits: wgpu::Buffer,
    tokens: wgpu::Buffer,
    scratch: wgpu::Buffer,
    step: wgpu::Buffer,
    rope: wgpu::Buffer,
    /// The fused products' norm eps and RoPE shape ([`MatVec::fuse_dims`]).
    fuse: wgpu::Buffer,
}

/// The buffer attention writes, sized for [`CHUNK`] tokens: one or the other, so a model
/// holds the shares exactly when its output products fold.
#[derive(Debug)]
enum AttnOut {
    /// The heads' results, which the output product reads.
    Heads(wgpu::Buffer),
    /// Each token's heads' shares of the output product, where it is folded into
    /// attention.
    Shares(wgpu::Buffer),
}

impl AttnOut {
    /// The shares' buffer, where the output product folds.
    fn shares(&self) -> Option<&wgpu::Buffer> {
        match self {
            AttnOut::Heads(_) => None,
            AttnOut::Shares(b) => Some(b),
        }
    }
}

impl Activations {
    fn new(
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

/// A block's weights as uploaded, before the kernels are compiled and bound.
struct Raw {
    attn_norm: wgpu::Buffer,
    ffn_norm: wgpu::Buffer,
    /// Output and down.
    m: [GpuMatrix; 2],
    qkv: Qkv,
    gate_up: GateUp,
    /// Biases of q, k and v where they get dispatches of their own (not fused), and of the
    /// output product.
    b: [Option<wgpu::Buffer>; 4],
    /// q's, k's and v's biases stacked (zeros where one is missing), for the fused product.
    qkv_bias: Option<wgpu::Buffer>,
    /// Per-head norm weights of q and k.
    head_norm: [Option<wgpu::Buffer>; 2],
}

impl Raw {
    /// Whether q, k and v can go through one product with bias and RoPE on the way out.
    fn fuses_qkv(&self) -> bool {
        matches!(self.qkv, Qkv::Stacked(_)) && self.head_norm.iter().all(Option::is_none)
    }

    /// Whether the output product can fold into attention, its shares added by one
    /// gate/up product and by down (the heads' shape is the model's to check).
    fn folds_output(&self) -> bool {
        matches!(self.gate_up, GateUp::Stacked(_)) && self.b[3].is_none()
    }

    /// The product kernels this block uses, with the output product folded into attention
    /// or not.
    fn kinds(&self, kv: KvFormat, fold: bool) -> Vec<ProductKind> {
        use MatVecInput::{RmsNormed, RmsNormedPlusShares, Vectors};
        let mut k = match fold {
            true => vec![(self.m[1].format, Vectors, MatVecOutput::AddShares)],
            false => vec![
                (self.m[0].format, Vectors, MatVecOutput::One),
                (self.m[1].format, Vectors, MatVecOutput::One),
            ],
        };
        match &self.qkv {
            Qkv::Stacked(m) if self.fuses_qkv() => {
                k.push((m.format, RmsNormed, MatVecOutput::QkvRope(kv)))
            }
            Qkv::Stacked(m) => k.push((m.format, RmsNormed, MatVecOutput::Qkv)),
            Qkv::Separate(ms) => {
                k.extend(ms.iter().map(|m| (m.format, RmsNormed, MatVecOutput::One)))
            }
        }
        match &self.gate_up {
            GateUp::Stacked(m) if fold => {
                k.push((m.format, RmsNormedPlusShares, MatVecOutput::SwiGlu))
            }
            GateUp::Stacked(m) => k.push((m.format, RmsNormed, MatVecOutput::SwiGlu)),
            GateUp::Separate(g, u) => {
                k.extend([g, u].map(|m| (m.format, RmsNormed, MatVecOutput::One)))
            }
        }
        k
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
        let cache = options.cache;
        let c = model.config().clone();
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
        let mut raw = Vec::with_capacity(c.n_layers);
        for (i, l) in w.layers.iter().enumerate() {
            let m = |m, what: &str| tensors::matrix(&gpu, m, bytes, &format!("block {i} {what}"));
            let v = |v: &[f32], what: &str| tensors::vector(&gpu, v, &format!("block {i} {what}"));
            let optional =
                |o: &Option<Vec<f32>>, what: &str| o.as_deref().map(|x| v(x, what)).transpose();
            let qkv = match tensors::stacked(
                &gpu,
                &[&l.wq, &l.wk, &l.wv],
                bytes,
                &format!("block {i} q, k, v"),
            )? {
                Some(s) => Qkv::Stacked(s),
                None => Qkv::Separate([m(&l.wq, "q")?, m(&l.wk, "k")?, m(&l.wv, "v")?]),
            };
            let head_norm = [
                optional(&l.q_norm, "q norm")?,
                optional(&l.k_norm, "k norm")?,
            ];
            // The fused q/k/v product adds the three biases stacked (zeros where one is
            // missing); the other paths add each with its own dispatch.
            let fused = matches!(qkv, Qkv::Stacked(_)) && head_norm.iter().all(Option::is_none);
            let biases = [(&l.bq, q_dim), (&l.bk, kv), (&l.bv, kv)];
            let qkv_bias = match fused && biases.iter().any(|(b, _)| b.is_some()) {
                true => {
                    let stacked: Vec<f32> = biases
                        .iter()
                        .flat_map(|(b, n)| {
                            b.as_deref().map_or_else(|| vec![0.0; *n], <[f32]>::to_vec)
                        })
                        .collect();
                    Some(v(&stacked, "q, k, v biases")?)
                }
                false => None,
            };
            let separate = |b: &Option<Vec<f32>>, what: &str| match fused {
                true => Ok(None),
                false => optional(b, what),
            };
            raw.push(Raw {
                attn_norm: v(&l.attn_norm, "attention norm")?,
                ffn_norm: v(&l.ffn_norm, "feed-forward norm")?,
                m: [m(&l.wo, "attention output")?, m(&l.down, "down")?],
                qkv,
                gate_up: match tensors::stacked(
                    &gpu,
                    &[&l.gate, &l.up],
                    bytes,
                    &format!("block {i} gate, up"),
                )? {
                    Some(s) => GateUp::Stacked(s),
                    None => GateUp::Separate(m(&l.gate, "gate")?, m(&l.up, "up")?),
                },
                b: [
                    separate(&l.bq, "q bias")?,
                    separate(&l.bk, "k bias")?,
                    separate(&l.bv, "v bias")?,
                    optional(&l.bo, "output bias")?,
                ],
                qkv_bias,
                head_norm,
            });
        }
        let weight_bytes = gpu.allocated_bytes() - start_bytes;
        // f16 caches where the device has them and every block writes its cache from the
        // fused q/k/v product; the element-wise kernels of the other paths (biases,
        // per-head norms, RoPE in the cache) read and write f32.
        // An even row width keeps every slot's and position's rows on whole 32-bit words
        // (the unit of the copies between slots).
        let f16 = cache == KvFormat::F16
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
        // A fused q/k/v product without biases adds these zeros.
        let no_bias = gpu.zeroed("no q, k, v biases", q_dim + 2 * kv)?;
        let halves = c.rope_style == RopeStyle::Halves;
        let rope_q_dims = Rope::dims(&gpu, q_dim, c.head_dim, c.n_rot, false, halves);
        let rope_k_dims = Rope::dims(&gpu, kv, c.head_dim, c.n_rot, true, halves);
        let head_norm_dims = [
            HeadNorm::dims(&gpu, c.head_dim, c.n_heads, c.rms_eps, false),
            HeadNorm::dims(&gpu, c.head_dim, c.n_kv_heads, c.rms_eps, true),
        ];
        let bias_dims = [
            Bias::dims(&gpu, q_dim, false),
            Bias::dims(&gpu, kv, true),
            Bias::dims(&gpu, kv, true),
            Bias::dims(&gpu, d, false),
        ];
        let shape = AttentionShape {
            n_heads: c.n_heads,
            n_kv_heads: c.n_kv_heads,
            head_dim: c.head_dim,
            max_ctx,
        };
        let attn_dims = match fold {
            true => Attention::dims_shares(&gpu, &shape, d)?,
            false => Attention::dims(&gpu, &shape)?,
        };
        let swiglu_dims = SwiGlu::dims(&gpu, ff);
        let a = &act;
        // Binds a product of `m` as `kind`, reading `x` (normed by `norm` where the kind
        // says so) and writing `out` as `mode` says.
        let product = |kind: ProductKind,
                       m: &GpuMatrix,
                       dims: &wgpu::Buffer,
                       x: &wgpu::Buffer,
                       out: &wgpu::Buffer,
                       extra: MatVecBindings<'_>|
         -> Result<Product, GpuError> {
            let bind = kernels.product(kind).bind_all(
                &gpu,
                &MatVecBindings {
                    weights: &m.buffer,
                    x,
                    out,
                    dims,
                    ..extra
                },
            )?;
            Ok(Product {
                kind,
                rows: m.rows,
                bind,
            })
        };
        let base = MatVecBindings {
            weights: &a.x,
            x: &a.x,
            out: &a.x,
            dims: &a.step,
            step: &a.step,
            caches: None,
            norm: None,
            fuse: Some(&a.fuse),
            rope_table: None,
            bias: None,
            shares: None,
        };
        let dims = |m: &GpuMatrix, mode| MatVec::dims(&gpu, m.rows, m.cols, mode);
        let mut blocks = Vec::with_capacity(c.n_layers);
        let mut caches = Vec::with_capacity(c.n_layers);
        for r in &raw {
            let kc = gpu.zeroed("k cache", cache_format.words(slots * max_ctx * kv))?;
            let vc = gpu.zeroed("v cache", cache_format.words(slots * max_ctx * kv))?;
            caches.push([kc.clone(), vc.clone()]);
            let [wo, down] = &r.m;
            let normed = MatVecBindings {
                norm: Some(&r.attn_norm),
                ..base
            };
            let qkv = match &r.qkv {
                Qkv::Stacked(m) => {
                    let dm = MatVec::dims_qkv(&gpu, q_dim, kv, d)?;
                    let fused = r.fuses_qkv();
                    let output = match fused {
                        true => MatVecOutput::QkvRope(cache_format),
                        false => MatVecOutput::Qkv,
                    };
                    let extra = MatVecBindings {
                        caches: Some((&kc, &vc)),
                        rope_table: Some(&a.rope),
                        bias: Some(r.qkv_bias.as_ref().unwrap_or(&no_bias)),
                        ..normed
                    };
                    let p = product(
                        (m.format, MatVecInput::RmsNormed, output),
                        m,
                        &dm,
                        &a.x,
                        &a.q,
                        extra,
                    )?;
                    match fused {
                        true => QkvIn::Fused(p),
                        false => QkvIn::Stacked(p),
                    }
                }
                Qkv::Separate([wq, wk, wv]) => {
                    let kind =
                        |m: &GpuMatrix| (m.format, MatVecInput::RmsNormed, MatVecOutput::One);
                    QkvIn::Separate([
                        product(
                            kind(wq),
                            wq,
                            &dims(wq, MatVecMode::Write)?,
                            &a.x,
                            &a.q,
                            normed,
                        )?,
                        product(
                            kind(wk),
                            wk,
                            &dims(wk, MatVecMode::Cache)?,
                            &a.x,
                            &kc,
                            normed,
                        )?,
                        product(
                            kind(wv),
                            wv,
                            &dims(wv, MatVecMode::Cache)?,
                            &a.x,
                            &vc,
                            normed,
                        )?,
                    ])
                }
            };
            let fused = matches!(qkv, QkvIn::Fused(_));
            let ffn_normed = MatVecBindings {
                norm: Some(&r.ffn_norm),
                ..base
            };
            // The shares' buffer is there exactly when the output product folds.
            let ffn_in = match (&r.gate_up, a.attn.shares()) {
                (GateUp::Stacked(m), Some(shares)) => {
                    let kind = (
                        m.format,
                        MatVecInput::RmsNormedPlusShares,
                        MatVecOutput::SwiGlu,
                    );
                    let dm =
                        MatVec::dims_shares(&gpu, m.rows, m.cols, MatVecMode::Write, c.n_heads)?;
                    let with_shares = MatVecBindings {
                        shares: Some(shares),
                        ..ffn_normed
                    };
                    FfnIn::Stacked(product(kind, m, &dm, &a.x, &a.gate, with_shares)?)
                }
                (GateUp::Stacked(m), None) => {
                    let kind = (m.format, MatVecInput::RmsNormed, MatVecOutput::SwiGlu);
                    let dm = dims(m, MatVecMode::Write)?;
                    FfnIn::Stacked(product(kind, m, &dm, &a.x, &a.gate, ffn_normed)?)
                }
                // Folding needs every block's gate and up stacked (`GpuModel::with_options`).
                (GateUp::Separate(gate, up), _) => {
                    // Allocated where any block's gate and up are separate, as here.
                    let up_out = a.up.as_ref().ok_or_else(|| {
                        GpuError::Shape("no buffer for separate up products".into())
                    })?;
                    let kind =
                        |m: &GpuMatrix| (m.format, MatVecInput::RmsNormed, MatVecOutput::One);
                    FfnIn::Separate {
                        gate: product(
                            kind(gate),
                            gate,
                            &dims(gate, MatVecMode::Write)?,
                            &a.x,
                            &a.gate,
                            ffn_normed,
                        )?,
                        up: product(
                            kind(up),
                            up,
                            &dims(up, MatVecMode::Write)?,
                            &a.x,
                            up_out,
                            ffn_normed,
                        )?,
                        swiglu: kernels
                            .swiglu
                            .bind(&gpu, &a.gate, up_out, &swiglu_dims, &a.step),
                    }
                }
            };
            let bias_bind = |i: usize, out: &wgpu::Buffer| {
                let b = r.b[i].as_ref()?;
                Some(kernels.bias.bind(&gpu, out, b, &bias_dims[i], &a.step))
            };
            let qkv_bias = match fused {
                true => Vec::new(),
                false => [(&a.q, q_dim), (&kc, kv), (&vc, kv)]
                    .into_iter()
                    .enumerate()
                    .filter_map(|(i, (out, width))| Some((bias_bind(i, out)?, width)))
                    .collect(),
            };
            let out_bias = bias_bind(3, &a.x);
            let head_norms = [(&a.q, c.n_heads), (&kc, c.n_kv_heads)]
                .into_iter()
                .enumerate()
                .filter_map(|(i, (v, heads))| {
                    let w = r.head_norm[i].as_ref()?;
                    let bind = kernels
                        .head_norm
                        .bind(&gpu, v, w, &head_norm_dims[i], &a.step);
                    Some((bind, heads))
                })
                .collect();
            let rope = (!fused).then(|| {
                [
                    kernels
                        .rope
                        .bind(&gpu, &a.q, &a.rope, &rope_q_dims, &a.step),
                    kernels.rope.bind(&gpu, &kc, &a.rope, &rope_k_dims, &a.step),
                ]
            });
            let plain = |m: &GpuMatrix| (m.format, MatVecInput::Vectors, MatVecOutput::One);
            let (attention, down) = match &a.attn {
                AttnOut::Shares(shares) => {
                    let out = AttentionOutput::Shares(wo.format);
                    let bind = kernels.attention(out).bind_shares(
                        &gpu,
                        &a.q,
                        (&kc, &vc),
                        &a.scratch,
                        shares,
                        &wo.buffer,
                        &attn_dims,
                        &a.step,
                    )?;
                    let kind = (down.format, MatVecInput::Vectors, MatVecOutput::AddShares);
                    let dm = MatVec::dims_shares(
                        &gpu,
                        down.rows,
                        down.cols,
                        MatVecMode::Accumulate,
                        c.n_heads,
                    )?;
                    let with_shares = MatVecBindings {
                        shares: Some(shares),
                        ..base
                    };
                    let down = product(kind, down, &dm, &a.gate, &a.x, with_shares)?;
                    (AttentionOut::Folded(bind, out), down)
                }
                AttnOut::Heads(heads) => {
                    let attention = kernels
                        .attention(AttentionOutput::Heads)
                        .bind(&gpu, &a.q, &kc, &vc, &a.scratch, heads, &attn_dims, &a.step)?;
                    let wo = product(
                        plain(wo),
                        wo,
                        &dims(wo, MatVecMode::Accumulate)?,
                        heads,
                        &a.x,
                        base,
                    )?;
                    let dm = dims(down, MatVecMode::Accumulate)?;
                    let down = product(plain(down), down, &dm, &a.gate, &a.x, base)?;
                    (AttentionOut::Separate { attention, wo }, down)
                }
            };
            blocks.push(Block {
                qkv,
                qkv_bias,
                head_norms,
                rope,
                attention,
                out_bias,
                ffn_in,
                down,
            });
        }
        let head_normed = MatVecBindings {
            norm: Some(&output_norm),
            ..base
        };
        let head = product(
            head_kind,
            head_m,
            &dims(head_m, MatVecMode::Head)?,
            &a.x,
            &a.logits,
            head_normed,
        )?;
        let staging = match slots > 1 {
            true => Some(gpu.zeroed("slot copy", cache_format.words(max_ctx * kv))?),
            false => None,
        };
        let embd_dims = MatVec::dims(&gpu, c.vocab_size, d, MatVecMode::Write)?;
        let embd_bind =
            kernels
                .get_rows
                .bind(&gpu, &embd.buffer, &a.tokens, &a.x, &embd_dims, &a.step);
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

    /// Runs `tokens` after the cached positions (appending theirs) and returns the logits
    /// of positions `logits_from..tokens.len()`, `vocab_size` each, as
    /// [`Model::forward`] does on the CPU.
    pub async fn forward(
        &mut self,
        tokens: &[TokenId],
        logits_from: usize,
    ) -> Result<Vec<f32>, LmError> {
        self.check_tokens(tokens)?;
        let vocab = self.config.vocab_size;
        let mut logits = Vec::with_capacity(tokens.len().saturating_sub(logits_from) * vocab);
        for (i, chunk) in tokens.chunks(CHUNK).enumerate() {
            let from = logits_from.saturating_sub(i * CHUNK).min(chunk.len());
            let run = self.run_chunk(chunk, from).await;
            match run {
                Ok(l) => logits.extend(l),
                Err(e) => {
                    self.lens[0] = 0;
                    return Err(LmError(e.to_string()));
                }
            }
        }
        Ok(logits)
    }

    /// Runs several sequences in one pass per [`CHUNK`] tokens: each `(slot, tokens)`
    /// (distinct slots, each with a token or more) runs `tokens` after the positions in its
    /// slot, appending theirs, and gets the logits after its last token, `vocab_size`
    /// floats. Every product takes all the runs' tokens together; each token attends to
    /// its own slot. The runs' last tokens go last, so the output head runs for them only.
    /// On an error the runs' slots are emptied.
    pub async fn forward_slots(
        &mut self,
        runs: &[(usize, &[TokenId])],
    ) -> Result<Vec<Vec<f32>>, LmError> {
        self.check_runs(runs)?;
        let base = |slot: usize| (slot * self.max_ctx) as u32;
        // Every run's tokens but its last, then every run's last token: a token's
        // predecessors run in its submission or an earlier one.
        let mut order: Vec<(TokenId, Place)> = Vec::new();
        for &(slot, tokens) in runs {
            let past = self.lens[slot];
            for (i, &t) in tokens[..tokens.len() - 1].iter().enumerate() {
                let pos = (past + i) as u32;
                order.push((
                    t,
                    Place {
                        pos,
                        base: base(slot),
                    },
                ));
            }
        }
        let heads_from = order.len();
        for &(slot, tokens) in runs {
            let pos = (self.lens[slot] + tokens.len() - 1) as u32;
            order.push((
                tokens[tokens.len() - 1],
                Place {
                    pos,
                    base: base(slot),
                },
            ));
        }
        let vocab = self.config.vocab_size;
        let mut out = Vec::with_capacity(runs.len());
        for (i, chunk) in order.chunks(CHUNK).enumerate() {
            let first = heads_from.saturating_sub(i * CHUNK).min(chunk.len());
            let (tokens, places): (Vec<TokenId>, Vec<Place>) = chunk.iter().copied().unzip();
            let run = async {
                self.dispatch(
                    &tokens,
                    &places,
                    first,
                    None::<fn(&mut wgpu::ComputePass<'_>)>,
                )?;
                match first < chunk.len() {
                    true => {
                        let n = (chunk.len() - first) * vocab;
                        self.gpu.read_f32(&self.act.logits, 0, n).await
                    }
                    false => Ok(Vec::new()),
                }
            };
            match run.await {
                Ok(l) => out.extend(l.chunks_exact(vocab).map(<[f32]>::to_vec)),
                Err(e) => {
                    for &(slot, _) in runs {
                        self.lens[slot] = 0;
                    }
                    return Err(LmError(e.to_string()));
                }
            }
        }
        for &(slot, tokens) in runs {
            self.lens[slot] += tokens.len();
        }
        Ok(out)
    }

    /// `Err` unless `runs` name distinct slots, each with a token or more that fit its
    /// slot and the vocabulary.
    fn check_runs(&self, runs: &[(usize, &[TokenId])]) -> Result<(), LmError> {
        let slots = self.slots();
        for (i, &(slot, tokens)) in runs.iter().enumerate() {
            if slot >= slots {
                return Err(LmError(format!(
                    "slot {slot} is outside the {slots} GPU KV caches"
                )));
            }
            if runs[..i].iter().any(|r| r.0 == slot) {
                return Err(LmError(format!("slot {slot} is run twice in one pass")));
            }
            if tokens.is_empty() {
                return Err(LmError(
                    "a sequence of the batch has no token to run".into(),
                ));
            }
            self.check_tokens_after(self.lens[slot], tokens)?;
        }
        Ok(())
    }

    /// Runs `tokens` (at least one) after the cached positions, as [`GpuModel::forward`]
    /// does, but leaves the logits of the last one on the GPU, at float 0 of
    /// [`GpuModel::logits_buffer`], instead of reading them back.
    pub fn forward_resident(&mut self, tokens: &[TokenId]) -> Result<(), LmError> {
        self.forward_resident_then(tokens, |_| {})
    }

    /// [`GpuModel::forward_resident`], with `then` recording more dispatches (which may
    /// read the logits) at the end of the last chunk's compute pass: one submission for
    /// the forward pass and what follows it.
    pub fn forward_resident_then(
        &mut self,
        tokens: &[TokenId],
        then: impl FnOnce(&mut wgpu::ComputePass<'_>),
    ) -> Result<(), LmError> {
        self.check_tokens(tokens)?;
        if tokens.is_empty() {
            return Err(LmError("a forward pass needs at least one token".into()));
        }
        let chunks = tokens.len().div_ceil(CHUNK);
        let mut then = Some(then);
        for (i, chunk) in tokens.chunks(CHUNK).enumerate() {
            let last = i + 1 == chunks;
            let first = if last { chunk.len() - 1 } else { chunk.len() };
            let after = if last { then.take() } else { None };
            if let Err(e) = self.dispatch_chunk(chunk, first, after) {
                self.lens[0] = 0;
                return Err(LmError(e.to_string()));
            }
        }
        Ok(())
    }

    /// The buffer the output head writes its logits to: `vocab_size` floats per token
    /// whose logits were asked for, from float 0.
    pub fn logits_buffer(&self) -> &wgpu::Buffer {
        &self.act.logits
    }

    /// `Err` when `tokens` would overflow the GPU context or hold an id outside the
    /// vocabulary.
    fn check_tokens(&self, tokens: &[TokenId]) -> Result<(), LmError> {
        self.check_tokens_after(self.lens[0], tokens)
    }

    /// [`GpuModel::check_tokens`] for `tokens` after `past` positions of a slot.
    fn check_tokens_after(&self, past: usize, tokens: &[TokenId]) -> Result<(), LmError> {
        let total = past + tokens.len();
        if total > self.max_ctx {
            return Err(LmError(format!(
                "context of {total} tokens exceeds the GPU context of {}",
                self.max_ctx
            )));
        }
        let vocab = self.config.vocab_size;
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= vocab) {
            return Err(LmError(format!(
                "token id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        Ok(())
    }

    /// One submission: `chunk` after the cache, logits of its tokens from `first`.
    async fn run_chunk(&mut self, chunk: &[TokenId], first: usize) -> Result<Vec<f32>, GpuError> {
        self.dispatch_chunk(chunk, first, None::<fn(&mut wgpu::ComputePass<'_>)>)?;
        let n = chunk.len();
        if first < n {
            self.gpu
                .read_f32(&self.act.logits, 0, (n - first) * self.config.vocab_size)
                .await
        } else {
            Ok(Vec::new())
        }
    }

    /// Records and submits the forward pass of `chunk` after slot 0's cache (the output
    /// head for its tokens from `first`), then what `after` records in the same pass,
    /// advancing the cache; reads nothing back.
    fn dispatch_chunk(
        &mut self,
        chunk: &[TokenId],
        first: usize,
        after: Option<impl FnOnce(&mut wgpu::ComputePass<'_>)>,
    ) -> Result<(), GpuError> {
        let past = self.lens[0];
        let places: Vec<Place> = (0..chunk.len())
            .map(|t| Place {
                pos: (past + t) as u32,
                base: 0,
            })
            .collect();
        self.dispatch(chunk, &places, first, after)?;
        self.lens[0] += chunk.len();
        Ok(())
    }

    /// Records and submits the forward pass of `tokens` (at most [`CHUNK`]), token `t` at
    /// `places[t]` (the output head for the tokens from `first`), then what `after`
    /// records in the same pass; reads nothing back and moves no slot's length.
    fn dispatch(
        &self,
        tokens: &[TokenId],
        places: &[Place],
        first: usize,
        after: Option<impl FnOnce(&mut wgpu::ComputePass<'_>)>,
    ) -> Result<(), GpuError> {
        let (n, gpu, c) = (tokens.len(), &self.gpu, &self.config);
        Step {
            first: first as u32,
            ..Step::default()
        }
        .write_placed(gpu, &self.act.step, places);
        gpu.write_words(&self.act.tokens, 0, tokens);
        let k = &self.kernels;
        let (q_dim, kv) = (c.n_heads * c.head_dim, c.kv_dim());
        let mv = |pass: &mut wgpu::ComputePass<'_>, p: &Product, tokens: usize| {
            k.product(p.kind).dispatch(pass, &p.bind, p.rows, tokens)
        };
        gpu.run(|pass| {
            k.get_rows.dispatch(pass, &self.embd, c.d_model, n);
            for b in &self.blocks {
                match &b.qkv {
                    QkvIn::Fused(p) | QkvIn::Stacked(p) => mv(pass, p, n),
                    QkvIn::Separate(ps) => {
                        for p in ps {
                            mv(pass, p, n);
                        }
                    }
                }
                for (bind, width) in &b.qkv_bias {
                    k.bias.dispatch(pass, bind, *width, n);
                }
                for (bind, heads) in &b.head_norms {
                    k.head_norm.dispatch(pass, bind, *heads, n);
                }
                if let Some([rope_q, rope_k]) = &b.rope {
                    k.rope.dispatch(pass, rope_q, q_dim, c.head_dim, c.n_rot, n);
                    k.rope.dispatch(pass, rope_k, kv, c.head_dim, c.n_rot, n);
                }
                match &b.attention {
                    AttentionOut::Separate { attention, wo } => {
                        k.attention(AttentionOutput::Heads)
                            .dispatch(pass, attention, c.n_heads, n);
                        mv(pass, wo, n);
                    }
                    AttentionOut::Folded(bind, out) => {
                        k.attention(*out).dispatch(pass, bind, c.n_heads, n)
                    }
                }
                if let Some(bind) = &b.out_bias {
                    k.bias.dispatch(pass, bind, c.d_model, n);
                }
                match &b.ffn_in {
                    FfnIn::Stacked(gate_up) => mv(pass, gate_up, n),
                    FfnIn::Separate { gate, up, swiglu } => {
                        mv(pass, gate, n);
                        mv(pass, up, n);
                        k.swiglu.dispatch(pass, swiglu, c.d_ff, n);
                    }
                }
                mv(pass, &b.down, n);
            }
            if first < n {
                mv(pass, &self.head, n - first);
            }
            if let Some(after) = after {
                after(pass);
            }
        })
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
