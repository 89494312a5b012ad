//! [`BurnModel`]: the weights on a burn device, one KV cache, and the block as burn ops.

use super::linear::{Linear, floats, vector};
use crate::Model;
use crate::config::{LlamaConfig, RopeStyle};
use crate::forward::{check_run, rope_angles};
use burn_tensor::activation::{silu, softmax};
use burn_tensor::{Bool, Device, Tensor, TensorData};
use sampler_core::{LmError, TokenId};
use std::sync::Arc;

/// Stand-in for −∞ in the causal mask: finite, so a masked score never meets ∞ − ∞.
const MASKED: f32 = -1e30;

/// Tokens run through the blocks together (as the CPU pass's chunks).
const CHUNK: usize = 64;

/// One transformer block's tensors.
#[derive(Debug)]
struct Block {
    attn_norm: Tensor<1>,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    bq: Option<Tensor<1>>,
    bk: Option<Tensor<1>>,
    bv: Option<Tensor<1>>,
    bo: Option<Tensor<1>>,
    q_norm: Option<Tensor<1>>,
    k_norm: Option<Tensor<1>>,
    ffn_norm: Tensor<1>,
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// A llama model on a burn device with a KV cache of one sequence.
#[derive(Debug)]
pub struct BurnModel {
    model: Arc<Model>,
    device: Device,
    blocks: Vec<Block>,
    output_norm: Tensor<1>,
    output: Linear,
    /// Keys and values of every cached position, per block: `[len, kv_dim]` each.
    cache: Vec<Option<(Tensor<2>, Tensor<2>)>>,
    len: usize,
    label: String,
}

impl BurnModel {
    /// Uploads `model`'s weights to `device` (named `label` in messages): quantized
    /// matrices stay as the file's blocks where `device` is wgpu (feature `burn-wgpu`);
    /// otherwise every matrix is decoded to f32 once.
    pub fn new(model: Arc<Model>, device: Device, label: &str) -> Self {
        let quantized = is_wgpu(&device);
        let bytes = model.bytes();
        let w = model.weights();
        let up = |m| Linear::upload(m, bytes, &device, quantized);
        let opt = |v: &Option<Vec<f32>>| v.as_deref().map(|v| vector(v, &device));
        let blocks = w
            .layers
            .iter()
            .map(|l| Block {
                attn_norm: vector(&l.attn_norm, &device),
                wq: up(&l.wq),
                wk: up(&l.wk),
                wv: up(&l.wv),
                wo: up(&l.wo),
                bq: opt(&l.bq),
                bk: opt(&l.bk),
                bv: opt(&l.bv),
                bo: opt(&l.bo),
                q_norm: opt(&l.q_norm),
                k_norm: opt(&l.k_norm),
                ffn_norm: vector(&l.ffn_norm, &device),
                gate: up(&l.gate),
                up: up(&l.up),
                down: up(&l.down),
            })
            .collect::<Vec<_>>();
        let n_layers = blocks.len();
        BurnModel {
            output_norm: vector(&w.output_norm, &device),
            output: up(&w.output),
            blocks,
            cache: vec![None; n_layers],
            len: 0,
            label: label.to_string(),
            device,
            model,
        }
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        self.model.config()
    }

    /// The model this was uploaded from (tokenizer, EOS).
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// The name given at [`BurnModel::new`] (the backend, for messages and benchmarks).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Positions in the KV cache.
    pub fn cached(&self) -> usize {
        self.len
    }

    /// Drops cached positions from `n` on.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.len {
            return;
        }
        for slot in &mut self.cache {
            *slot = match (n, slot.take()) {
                (0, _) | (_, None) => None,
                (n, Some((k, v))) => Some((k.narrow(0, 0, n), v.narrow(0, 0, n))),
            };
        }
        self.len = n;
    }

    /// Runs `tokens` after the cached positions (appending theirs) and returns the logits
    /// (`vocab` floats each) of the positions from `logits_from` (an index into `tokens`)
    /// to the end. Long runs go through the blocks 64 tokens at a time (`CHUNK`), so the
    /// attention scores stay 64 × context per head.
    pub async fn forward(
        &mut self,
        tokens: &[TokenId],
        logits_from: usize,
    ) -> Result<Vec<f32>, LmError> {
        let c = self.model.config().clone();
        check_run(&c, self.len, tokens)?;
        let past = self.len;
        let mut rows = Vec::new();
        for (i, chunk) in tokens.chunks(CHUNK).enumerate() {
            let from = logits_from.saturating_sub(i * CHUNK).min(chunk.len());
            rows.extend(self.run_chunk(&c, chunk, from));
        }
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let read = Tensor::cat(rows, 0)
            .into_data_async()
            .await
            .map_err(|e| format!("reading the logits back failed: {e:?}"))
            .and_then(|d| {
                d.convert::<f32>()
                    .try_into_vec::<f32>()
                    .map_err(|e| format!("unreadable logits: {e:?}"))
            });
        read.map_err(|e| {
            // The cache may hold positions whose run failed.
            self.truncate(past);
            LmError(format!("{}: {e}", self.label))
        })
    }

    /// One pass of the blocks over `tokens` (appending their keys and values); the logits
    /// of rows `from..` as a `[n - from, vocab]` tensor, if any.
    fn run_chunk(&mut self, c: &LlamaConfig, tokens: &[TokenId], from: usize) -> Option<Tensor<2>> {
        let n = tokens.len();
        let past = self.len;
        let mut x = self.embed(tokens);
        let (cos, sin) = self.rope_tables(c, past, n);
        let mask = (n > 1).then(|| causal_mask(past, n, &self.device));
        for (l, b) in self.blocks.iter().enumerate() {
            let h = rms_norm(x.clone(), &b.attn_norm, c.rms_eps);
            let mut q = add_bias(b.wq.apply(h.clone()), &b.bq);
            let mut k = add_bias(b.wk.apply(h.clone()), &b.bk);
            let v = add_bias(b.wv.apply(h), &b.bv);
            if let Some(w) = &b.q_norm {
                q = head_norm(q, w, c.head_dim, c.rms_eps);
            }
            if let Some(w) = &b.k_norm {
                k = head_norm(k, w, c.head_dim, c.rms_eps);
            }
            let q = rope(q, &cos, &sin, c);
            let k = rope(k, &cos, &sin, c);
            let (ck, cv) = match self.cache[l].take() {
                None => (k, v),
                Some((pk, pv)) => (Tensor::cat(vec![pk, k], 0), Tensor::cat(vec![pv, v], 0)),
            };
            let a = attention(c, q, ck.clone(), cv.clone(), mask.clone());
            self.cache[l] = Some((ck, cv));
            x = x + add_bias(b.wo.apply(a), &b.bo);

            let h = rms_norm(x.clone(), &b.ffn_norm, c.rms_eps);
            let g = silu(b.gate.apply(h.clone())) * b.up.apply(h);
            x = x + b.down.apply(g);
        }
        self.len += n;
        (from < n).then(|| {
            let hx = x.narrow(0, from, n - from);
            self.output
                .apply(rms_norm(hx, &self.output_norm, c.rms_eps))
        })
    }

    /// The embeddings of `tokens`, decoded on the host (one row each): `[n, d]`.
    fn embed(&self, tokens: &[TokenId]) -> Tensor<2> {
        let d = self.model.config().d_model;
        let mut x = vec![0f32; tokens.len() * d];
        for (row, &t) in x.chunks_exact_mut(d).zip(tokens) {
            self.model
                .weights()
                .embedding_row(self.model.bytes(), t as usize, row);
        }
        floats(x, [tokens.len(), d], &self.device)
    }

    /// RoPE's cosines and sines for positions `past..past + n`: `[n, n_rot / 2]` each,
    /// computed as the CPU forward pass computes them.
    fn rope_tables(&self, c: &LlamaConfig, past: usize, n: usize) -> (Tensor<2>, Tensor<2>) {
        let half = c.rope_freqs.len();
        let (mut cos, mut sin) = (Vec::with_capacity(n * half), Vec::with_capacity(n * half));
        for p in past..past + n {
            for (co, si) in rope_angles(p, &c.rope_freqs) {
                cos.push(co);
                sin.push(si);
            }
        }
        (
            floats(cos, [n, half], &self.device),
            floats(sin, [n, half], &self.device),
        )
    }
}

/// Whether `device` is burn's wgpu backend (where quantized matrices run through our kernels).
fn is_wgpu(device: &Device) -> bool {
    #[cfg(all(feature = "burn-wgpu", not(feature = "burn-fusion")))]
    {
        super::custom::is_wgpu(device)
    }
    #[cfg(any(not(feature = "burn-wgpu"), feature = "burn-fusion"))]
    {
        let _ = device;
        false
    }
}

/// `x / sqrt(mean(x²) + eps) · w`, row by row.
fn rms_norm(x: Tensor<2>, w: &Tensor<1>, eps: f32) -> Tensor<2> {
    let scale = x
        .clone()
        .square()
        .mean_dim(1)
        .add_scalar(eps)
        .sqrt()
        .recip();
    x * scale * w.clone().unsqueeze_dim::<2>(0)
}

/// [`rms_norm`] of each head of width `hd` (qwen3's q and k norms).
fn head_norm(x: Tensor<2>, w: &Tensor<1>, hd: usize, eps: f32) -> Tensor<2> {
    let [n, width] = x.dims();
    rms_norm(x.reshape([n * width / hd, hd]), w, eps).reshape([n, width])
}

fn add_bias(x: Tensor<2>, b: &Option<Tensor<1>>) -> Tensor<2> {
    match b {
        Some(b) => x + b.clone().unsqueeze_dim::<2>(0),
        None => x,
    }
}

/// RoPE on every head of `x` (`[n, heads · head_dim]`), pairing dimensions as the
/// architecture says; the dimensions past `n_rot` pass unturned.
pub(super) fn rope(x: Tensor<2>, cos: &Tensor<2>, sin: &Tensor<2>, c: &LlamaConfig) -> Tensor<2> {
    let [n, width] = x.dims();
    let (hd, rot) = (c.head_dim, c.n_rot);
    if rot == 0 {
        return x;
    }
    let half = rot / 2;
    let heads = width / hd;
    let x = x.reshape([n, heads, hd]);
    let turned = x.clone().narrow(2, 0, rot);
    // Pair members as [n, heads, half, 1] (adjacent) or [n, heads, 1, half] (halves).
    let (shape, cs_shape, pair_dim) = match c.rope_style {
        RopeStyle::Adjacent => ([n, heads, half, 2], [n, 1, half, 1], 3),
        RopeStyle::Halves => ([n, heads, 2, half], [n, 1, 1, half], 2),
    };
    let turned = turned.reshape(shape);
    let a = turned.clone().narrow(pair_dim, 0, 1);
    let b = turned.narrow(pair_dim, 1, 1);
    let (cos, sin) = (cos.clone().reshape(cs_shape), sin.clone().reshape(cs_shape));
    let ra = a.clone() * cos.clone() - b.clone() * sin.clone();
    let rb = a * sin + b * cos;
    let turned = Tensor::cat(vec![ra, rb], pair_dim).reshape([n, heads, rot]);
    let out = if rot < hd {
        Tensor::cat(vec![turned, x.narrow(2, rot, hd - rot)], 2)
    } else {
        turned
    };
    out.reshape([n, width])
}

/// `mask[0, t, j]` is true where new position `t` must not see cached position `j`.
fn causal_mask(past: usize, n: usize, device: &Device) -> Tensor<3, Bool> {
    let total = past + n;
    let m: Vec<bool> = (0..n)
        .flat_map(|t| (0..total).map(move |j| j > past + t))
        .collect();
    Tensor::from_data(TensorData::new(m, [1, n, total]), device)
}

/// Causal grouped-query attention of the new positions' `q` (`[n, heads · hd]`) over
/// every cached key and value (`[len, kv_heads · hd]`): `[n, heads · hd]`.
fn attention(
    c: &LlamaConfig,
    q: Tensor<2>,
    k: Tensor<2>,
    v: Tensor<2>,
    mask: Option<Tensor<3, Bool>>,
) -> Tensor<2> {
    let (h, kvh, hd) = (c.n_heads, c.n_kv_heads, c.head_dim);
    let n = q.dims()[0];
    let len = k.dims()[0];
    let q = q.reshape([n, h, hd]).swap_dims(0, 1);
    // Head `i` reads key/value head `i / (h / kvh)`: repeat each kv head h / kvh times.
    let spread = |t: Tensor<2>| -> Tensor<3> {
        t.reshape([len, kvh, hd])
            .swap_dims(0, 1)
            .unsqueeze_dim::<4>(1)
            .expand([kvh, h / kvh, len, hd])
            .reshape([h, len, hd])
    };
    let scores = q
        .matmul(spread(k).swap_dims(1, 2))
        .mul_scalar(1.0 / (hd as f32).sqrt());
    let scores = match mask {
        Some(m) => scores.mask_fill(m.expand([h, n, len]), MASKED),
        None => scores,
    };
    softmax(scores, 2)
        .matmul(spread(v))
        .swap_dims(0, 1)
        .reshape([n, h * hd])
}

impl crate::engine::Engine for BurnModel {
    fn config(&self) -> &LlamaConfig {
        self.model.config()
    }

    fn eos(&self) -> TokenId {
        self.model.tokenizer().eos()
    }

    fn context_name(&self) -> &'static str {
        "the model's context"
    }

    fn cached(&self) -> usize {
        self.len
    }

    fn truncate(&mut self, n: usize) {
        BurnModel::truncate(self, n)
    }

    async fn forward(
        &mut self,
        tokens: &[TokenId],
        logits_from: usize,
    ) -> Result<Vec<f32>, LmError> {
        BurnModel::forward(self, tokens, logits_from).await
    }
}
