//! A transformer block bound to its buffers ([`Block`]): how [`Binder`] binds each kernel
//! to the weights, caches and activations, and the dispatches the block records.

use super::activations::{Activations, AttnOut};
use super::upload::{GateUp, Qkv, Raw};
use crate::config::{LlamaConfig, RopeStyle};
use crate::gpu::kernels::{Kernels, ProductKind};
use crate::gpu::tensors::GpuMatrix;
use shaders::{
    Attention, AttentionOutput, AttentionShape, Bias, Gpu, GpuError, HeadNorm, KvFormat, MatVec,
    MatVecBindings, MatVecInput, MatVecMode, MatVecOutput, Rope, SwiGlu, wgpu,
};

/// One matrix product bound to its buffers.
#[derive(Debug)]
pub(super) struct Product {
    kind: ProductKind,
    rows: usize,
    bind: wgpu::BindGroup,
}

impl Product {
    /// Records the product for `tokens` tokens.
    pub(super) fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, k: &Kernels, tokens: usize) {
        k.product(self.kind)
            .dispatch(pass, &self.bind, self.rows, tokens)
    }
}

/// The bind groups of one transformer block. The products fold in what they can: each
/// block's two RMSNorms (into the q/k/v and gate/up products), RoPE, the biases and the
/// cache write (into the stacked q/k/v product), SwiGLU (into the stacked gate/up product)
/// and the residual adds (the output and down products accumulate into `x`), so a llama
/// block is five dispatches, four with the output product folded into attention
/// ([`crate::gpu::GpuOptions::fold_output`]); what a file's layout keeps apart runs on its
/// own.
#[derive(Debug)]
pub(super) struct Block {
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

impl Block {
    /// Records this block's dispatches for `n` tokens of model `c`.
    pub(super) fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        k: &Kernels,
        c: &LlamaConfig,
        n: usize,
    ) {
        let (q_dim, kv) = (c.n_heads * c.head_dim, c.kv_dim());
        match &self.qkv {
            QkvIn::Fused(p) | QkvIn::Stacked(p) => p.dispatch(pass, k, n),
            QkvIn::Separate(ps) => {
                for p in ps {
                    p.dispatch(pass, k, n);
                }
            }
        }
        for (bind, width) in &self.qkv_bias {
            k.bias.dispatch(pass, bind, *width, n);
        }
        for (bind, heads) in &self.head_norms {
            k.head_norm.dispatch(pass, bind, *heads, n);
        }
        if let Some([rope_q, rope_k]) = &self.rope {
            k.rope.dispatch(pass, rope_q, q_dim, c.head_dim, c.n_rot, n);
            k.rope.dispatch(pass, rope_k, kv, c.head_dim, c.n_rot, n);
        }
        match &self.attention {
            AttentionOut::Separate { attention, wo } => {
                k.attention(AttentionOutput::Heads)
                    .dispatch(pass, attention, c.n_heads, n);
                wo.dispatch(pass, k, n);
            }
            AttentionOut::Folded(bind, out) => k.attention(*out).dispatch(pass, bind, c.n_heads, n),
        }
        if let Some(bind) = &self.out_bias {
            k.bias.dispatch(pass, bind, c.d_model, n);
        }
        match &self.ffn_in {
            FfnIn::Stacked(gate_up) => gate_up.dispatch(pass, k, n),
            FfnIn::Separate { gate, up, swiglu } => {
                gate.dispatch(pass, k, n);
                up.dispatch(pass, k, n);
                k.swiglu.dispatch(pass, swiglu, c.d_ff, n);
            }
        }
        self.down.dispatch(pass, k, n);
    }
}

/// Binds the compiled kernels to a model's activations: the shape uniforms every block
/// shares, made once, and a block's or the output head's bind groups from its weights.
pub(super) struct Binder<'a> {
    gpu: &'a Gpu,
    c: &'a LlamaConfig,
    kernels: &'a Kernels,
    act: &'a Activations,
    /// How the caches store keys and values.
    kv_format: KvFormat,
    /// Zeros a fused q/k/v product without biases adds.
    no_bias: wgpu::Buffer,
    rope_q_dims: wgpu::Buffer,
    rope_k_dims: wgpu::Buffer,
    /// The per-head norms' shapes, for q and for k.
    head_norm_dims: [wgpu::Buffer; 2],
    /// The biases' shapes, for q, k, v and the output product.
    bias_dims: [wgpu::Buffer; 4],
    attn_dims: wgpu::Buffer,
    swiglu_dims: wgpu::Buffer,
}

impl<'a> Binder<'a> {
    /// Makes the shape uniforms for model `c` with caches of `max_ctx` positions in
    /// `kv_format`, attention writing what `act` holds (the heads' results or their
    /// shares of the output product).
    pub(super) fn new(
        gpu: &'a Gpu,
        c: &'a LlamaConfig,
        kernels: &'a Kernels,
        act: &'a Activations,
        (max_ctx, kv_format): (usize, KvFormat),
    ) -> Result<Self, GpuError> {
        let (q_dim, kv) = (c.n_heads * c.head_dim, c.kv_dim());
        let halves = c.rope_style == RopeStyle::Halves;
        let shape = AttentionShape {
            n_heads: c.n_heads,
            n_kv_heads: c.n_kv_heads,
            head_dim: c.head_dim,
            max_ctx,
        };
        Ok(Binder {
            gpu,
            c,
            kernels,
            act,
            kv_format,
            no_bias: gpu.zeroed("no q, k, v biases", q_dim + 2 * kv)?,
            rope_q_dims: Rope::dims(gpu, q_dim, c.head_dim, c.n_rot, false, halves),
            rope_k_dims: Rope::dims(gpu, kv, c.head_dim, c.n_rot, true, halves),
            head_norm_dims: [
                HeadNorm::dims(gpu, c.head_dim, c.n_heads, c.rms_eps, false),
                HeadNorm::dims(gpu, c.head_dim, c.n_kv_heads, c.rms_eps, true),
            ],
            bias_dims: [
                Bias::dims(gpu, q_dim, false),
                Bias::dims(gpu, kv, true),
                Bias::dims(gpu, kv, true),
                Bias::dims(gpu, c.d_model, false),
            ],
            attn_dims: match act.attn {
                AttnOut::Shares(_) => Attention::dims_shares(gpu, &shape, c.d_model)?,
                AttnOut::Heads(_) => Attention::dims(gpu, &shape)?,
            },
            swiglu_dims: SwiGlu::dims(gpu, c.d_ff),
        })
    }

    /// The bindings every product starts from: the step uniform and the fused products'
    /// shape; the rest is filled in per product (`weights`, `x`, `out` and `dims` here are
    /// placeholders).
    fn base(&self) -> MatVecBindings<'a> {
        let a = self.act;
        MatVecBindings {
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
        }
    }

    /// Binds a product of `m` as `kind`, reading `x` (normed by `extra.norm` where the
    /// kind says so) and writing `out` as `dims` says.
    fn product<'b>(
        &self,
        kind: ProductKind,
        m: &'b GpuMatrix,
        dims: &'b wgpu::Buffer,
        (x, out): (&'b wgpu::Buffer, &'b wgpu::Buffer),
        extra: MatVecBindings<'b>,
    ) -> Result<Product, GpuError> {
        let bind = self.kernels.product(kind).bind_all(
            self.gpu,
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
    }

    /// A plain product's shape uniform: `m`'s rows written as `mode` says.
    fn dims(&self, m: &GpuMatrix, mode: MatVecMode) -> Result<wgpu::Buffer, GpuError> {
        MatVec::dims(self.gpu, m.rows, m.cols, mode)
    }

    /// Binds block `r`, whose caches are `kc` and `vc`.
    pub(super) fn block(
        &self,
        r: &Raw,
        (kc, vc): (&wgpu::Buffer, &wgpu::Buffer),
    ) -> Result<Block, GpuError> {
        let (gpu, c, k, a) = (self.gpu, self.c, self.kernels, self.act);
        let qkv = self.qkv(r, (kc, vc))?;
        let fused = matches!(qkv, QkvIn::Fused(_));
        let bias_bind = |i: usize, out: &wgpu::Buffer| {
            let b = r.b[i].as_ref()?;
            Some(k.bias.bind(gpu, out, b, &self.bias_dims[i], &a.step))
        };
        let qkv_bias = match fused {
            true => Vec::new(),
            false => [
                (&a.q, c.n_heads * c.head_dim),
                (kc, c.kv_dim()),
                (vc, c.kv_dim()),
            ]
            .into_iter()
            .enumerate()
            .filter_map(|(i, (out, width))| Some((bias_bind(i, out)?, width)))
            .collect(),
        };
        let head_norms = [(&a.q, c.n_heads), (kc, c.n_kv_heads)]
            .into_iter()
            .enumerate()
            .filter_map(|(i, (v, heads))| {
                let w = r.head_norm[i].as_ref()?;
                let bind = k
                    .head_norm
                    .bind(gpu, v, w, &self.head_norm_dims[i], &a.step);
                Some((bind, heads))
            })
            .collect();
        let rope = (!fused).then(|| {
            [
                k.rope.bind(gpu, &a.q, &a.rope, &self.rope_q_dims, &a.step),
                k.rope.bind(gpu, kc, &a.rope, &self.rope_k_dims, &a.step),
            ]
        });
        let (attention, down) = self.attention_and_down(r, (kc, vc))?;
        Ok(Block {
            qkv,
            qkv_bias,
            head_norms,
            rope,
            attention,
            out_bias: bias_bind(3, &a.x),
            ffn_in: self.ffn_in(r)?,
            down,
        })
    }

    /// Block `r`'s q/k/v product(s), the attention norm folded in: one product with biases,
    /// RoPE and the cache write on the way out where the block allows it.
    fn qkv(&self, r: &Raw, (kc, vc): (&wgpu::Buffer, &wgpu::Buffer)) -> Result<QkvIn, GpuError> {
        let (c, a) = (self.c, self.act);
        let normed = MatVecBindings {
            norm: Some(&r.attn_norm),
            ..self.base()
        };
        Ok(match &r.qkv {
            Qkv::Stacked(m) => {
                let dm = MatVec::dims_qkv(self.gpu, c.n_heads * c.head_dim, c.kv_dim(), c.d_model)?;
                let fused = r.fuses_qkv();
                let output = match fused {
                    true => MatVecOutput::QkvRope(self.kv_format),
                    false => MatVecOutput::Qkv,
                };
                let extra = MatVecBindings {
                    caches: Some((kc, vc)),
                    rope_table: Some(&a.rope),
                    bias: Some(r.qkv_bias.as_ref().unwrap_or(&self.no_bias)),
                    ..normed
                };
                let kind = (m.format, MatVecInput::RmsNormed, output);
                let p = self.product(kind, m, &dm, (&a.x, &a.q), extra)?;
                match fused {
                    true => QkvIn::Fused(p),
                    false => QkvIn::Stacked(p),
                }
            }
            Qkv::Separate([wq, wk, wv]) => {
                let one = |m: &GpuMatrix, mode, out| {
                    let kind = (m.format, MatVecInput::RmsNormed, MatVecOutput::One);
                    self.product(kind, m, &self.dims(m, mode)?, (&a.x, out), normed)
                };
                QkvIn::Separate([
                    one(wq, MatVecMode::Write, &a.q)?,
                    one(wk, MatVecMode::Cache, kc)?,
                    one(wv, MatVecMode::Cache, vc)?,
                ])
            }
        })
    }

    /// Block `r`'s gate/up product(s) and SwiGLU, the feed-forward norm folded in (and the
    /// heads' shares added to the input where the output product folds).
    fn ffn_in(&self, r: &Raw) -> Result<FfnIn, GpuError> {
        let a = self.act;
        let normed = MatVecBindings {
            norm: Some(&r.ffn_norm),
            ..self.base()
        };
        // The shares' buffer is there exactly when the output product folds.
        Ok(match (&r.gate_up, a.attn.shares()) {
            (GateUp::Stacked(m), Some(shares)) => {
                let kind = (
                    m.format,
                    MatVecInput::RmsNormedPlusShares,
                    MatVecOutput::SwiGlu,
                );
                let dm = MatVec::dims_shares(
                    self.gpu,
                    m.rows,
                    m.cols,
                    MatVecMode::Write,
                    self.c.n_heads,
                )?;
                let with_shares = MatVecBindings {
                    shares: Some(shares),
                    ..normed
                };
                FfnIn::Stacked(self.product(kind, m, &dm, (&a.x, &a.gate), with_shares)?)
            }
            (GateUp::Stacked(m), None) => {
                let kind = (m.format, MatVecInput::RmsNormed, MatVecOutput::SwiGlu);
                let dm = self.dims(m, MatVecMode::Write)?;
                FfnIn::Stacked(self.product(kind, m, &dm, (&a.x, &a.gate), normed)?)
            }
            // Folding needs every block's gate and up stacked (`GpuModel::with_options`).
            (GateUp::Separate(gate, up), _) => {
                // Allocated where any block's gate and up are separate, as here.
                let up_out = a
                    .up
                    .as_ref()
                    .ok_or_else(|| GpuError::Shape("no buffer for separate up products".into()))?;
                let one = |m: &GpuMatrix, out| {
                    let kind = (m.format, MatVecInput::RmsNormed, MatVecOutput::One);
                    let dm = self.dims(m, MatVecMode::Write)?;
                    self.product(kind, m, &dm, (&a.x, out), normed)
                };
                FfnIn::Separate {
                    gate: one(gate, &a.gate)?,
                    up: one(up, up_out)?,
                    swiglu: self.kernels.swiglu.bind(
                        self.gpu,
                        &a.gate,
                        up_out,
                        &self.swiglu_dims,
                        &a.step,
                    ),
                }
            }
        })
    }

    /// Block `r`'s attention over caches `kc` and `vc` with its output product (folded
    /// into attention, or a product of its own), and down.
    fn attention_and_down(
        &self,
        r: &Raw,
        (kc, vc): (&wgpu::Buffer, &wgpu::Buffer),
    ) -> Result<(AttentionOut, Product), GpuError> {
        let (gpu, a) = (self.gpu, self.act);
        let [wo, down] = &r.m;
        let plain = |m: &GpuMatrix| (m.format, MatVecInput::Vectors, MatVecOutput::One);
        Ok(match &a.attn {
            AttnOut::Shares(shares) => {
                let out = AttentionOutput::Shares(wo.format);
                let bind = self.kernels.attention(out).bind_shares(
                    gpu,
                    &a.q,
                    (kc, vc),
                    &a.scratch,
                    shares,
                    &wo.buffer,
                    &self.attn_dims,
                    &a.step,
                )?;
                let kind = (down.format, MatVecInput::Vectors, MatVecOutput::AddShares);
                let dm = MatVec::dims_shares(
                    gpu,
                    down.rows,
                    down.cols,
                    MatVecMode::Accumulate,
                    self.c.n_heads,
                )?;
                let with_shares = MatVecBindings {
                    shares: Some(shares),
                    ..self.base()
                };
                let down = self.product(kind, down, &dm, (&a.gate, &a.x), with_shares)?;
                (AttentionOut::Folded(bind, out), down)
            }
            AttnOut::Heads(heads) => {
                let attention = self.kernels.attention(AttentionOutput::Heads).bind(
                    gpu,
                    &a.q,
                    kc,
                    vc,
                    &a.scratch,
                    heads,
                    &self.attn_dims,
                    &a.step,
                )?;
                let wo_dims = self.dims(wo, MatVecMode::Accumulate)?;
                let wo = self.product(plain(wo), wo, &wo_dims, (heads, &a.x), self.base())?;
                let dm = self.dims(down, MatVecMode::Accumulate)?;
                let down = self.product(plain(down), down, &dm, (&a.gate, &a.x), self.base())?;
                (AttentionOut::Separate { attention, wo }, down)
            }
        })
    }

    /// Binds the output head, matrix `m` normed by `norm`, writing the logits.
    pub(super) fn head(
        &self,
        kind: ProductKind,
        m: &GpuMatrix,
        norm: &wgpu::Buffer,
    ) -> Result<Product, GpuError> {
        let a = self.act;
        let normed = MatVecBindings {
            norm: Some(norm),
            ..self.base()
        };
        let dm = self.dims(m, MatVecMode::Head)?;
        self.product(kind, m, &dm, (&a.x, &a.logits), normed)
    }
}
