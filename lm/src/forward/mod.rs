//! The llama forward pass on the CPU, computing on the quantized blocks in place.
//!
//! Per block: `h = RMSNorm(x)·attn_norm`; `q, k, v = Wq h, Wk h, Wv h`; RoPE on q and k;
//! grouped-query causal attention over the KV cache; `x += Wo·attn`;
//! `h = RMSNorm(x)·ffn_norm`; `x += Wdown·(SiLU(Wgate h) ⊙ Wup h)`. After the last block,
//! `logits = Wout·(RMSNorm(x)·output_norm)`, with `Wout = token_embd` when the file has no
//! `output.weight` (tied embeddings). This is the reference the GPU path is checked against.

mod matmul;
mod ops;
mod pause;
mod weights;

pub use matmul::{matvec_q4_1, matvec_q8_0};
pub(crate) use ops::log_softmax;
pub use pause::{NoPause, Pause};
pub(crate) use weights::Weights;

use crate::config::LlamaConfig;
use matmul::matmul;
use sampler_core::{LmError, TokenId};

/// Tokens run through the blocks together; bounds the scratch memory of long prompts.
const CHUNK: usize = 64;

/// Keys and values of every position run so far, per block (f32).
#[derive(Debug, Clone)]
pub struct KvCache {
    k: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
    len: usize,
    kv_dim: usize,
}

impl KvCache {
    /// An empty cache for a model with this configuration.
    pub fn new(config: &LlamaConfig) -> Self {
        KvCache {
            k: vec![Vec::new(); config.n_layers],
            v: vec![Vec::new(); config.n_layers],
            len: 0,
            kv_dim: config.kv_dim(),
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keeps the first `n` positions (no-op if it holds fewer).
    pub fn truncate(&mut self, n: usize) {
        if n < self.len {
            self.len = n;
            for layer in self.k.iter_mut().chain(self.v.iter_mut()) {
                layer.truncate(n * self.kv_dim);
            }
        }
    }
}

/// Runs `tokens` after the positions in `cache`, appending theirs, and returns the
/// logits (`vocab` floats each) of the positions from `logits_from` (an index into
/// `tokens`) to the end. Three times per block it asks `pause` whether to hand control back.
pub(crate) async fn forward(
    c: &LlamaConfig,
    w: &Weights,
    bytes: &[u8],
    cache: &mut KvCache,
    tokens: &[TokenId],
    logits_from: usize,
    pause: &mut impl Pause,
) -> Result<Vec<f32>, LmError> {
    let total = cache.len + tokens.len();
    if total > c.context_length {
        return Err(LmError(format!(
            "context of {total} tokens exceeds the model's context of {}",
            c.context_length
        )));
    }
    if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= c.vocab_size) {
        return Err(LmError(format!(
            "token id {bad} is outside the vocabulary of {}",
            c.vocab_size
        )));
    }
    let mut logits = Vec::with_capacity(tokens.len().saturating_sub(logits_from) * c.vocab_size);
    for (i, chunk) in tokens.chunks(CHUNK).enumerate() {
        let start = i * CHUNK;
        let from = logits_from.saturating_sub(start).min(chunk.len());
        forward_chunk(c, w, bytes, cache, chunk, from, &mut logits, pause).await;
    }
    Ok(logits)
}

#[allow(clippy::too_many_arguments)]
async fn forward_chunk(
    c: &LlamaConfig,
    w: &Weights,
    bytes: &[u8],
    cache: &mut KvCache,
    tokens: &[TokenId],
    logits_from: usize,
    logits: &mut Vec<f32>,
    pause: &mut impl Pause,
) {
    let (n, d, kv_dim, hd) = (tokens.len(), c.d_model, c.kv_dim(), c.head_dim);
    let q_dim = c.n_heads * hd;
    let n_past = cache.len;
    let mut x = vec![0f32; n * d];
    for (t, &tok) in tokens.iter().enumerate() {
        w.embedding_row(bytes, tok as usize, &mut x[t * d..(t + 1) * d]);
    }
    let angles: Vec<Vec<(f32, f32)>> = (0..n)
        .map(|t| ops::rope_angles(n_past + t, c.n_rot, c.rope_base))
        .collect();
    let mut h = vec![0f32; n * d];
    let mut q = vec![0f32; n * q_dim];
    let mut k = vec![0f32; n * kv_dim];
    let mut v = vec![0f32; n * kv_dim];
    let mut attn = vec![0f32; n * q_dim];
    let mut o = vec![0f32; n * d];
    let mut gate = vec![0f32; n * c.d_ff];
    let mut up = vec![0f32; n * c.d_ff];
    for (l, layer) in w.layers.iter().enumerate() {
        ops::rms_norm(&x, &layer.attn_norm, c.rms_eps, &mut h);
        matmul(layer.wq.data(bytes), q_dim, d, &h, n, &mut q);
        matmul(layer.wk.data(bytes), kv_dim, d, &h, n, &mut k);
        matmul(layer.wv.data(bytes), kv_dim, d, &h, n, &mut v);
        for t in 0..n {
            ops::rope(&mut q[t * q_dim..(t + 1) * q_dim], hd, &angles[t]);
            ops::rope(&mut k[t * kv_dim..(t + 1) * kv_dim], hd, &angles[t]);
        }
        cache.k[l].truncate(n_past * kv_dim);
        cache.v[l].truncate(n_past * kv_dim);
        cache.k[l].extend_from_slice(&k);
        cache.v[l].extend_from_slice(&v);
        attention(c, &q, &cache.k[l], &cache.v[l], n_past, n, &mut attn);
        matmul(layer.wo.data(bytes), d, q_dim, &attn, n, &mut o);
        add(&mut x, &o);
        maybe_pause(pause).await;

        ops::rms_norm(&x, &layer.ffn_norm, c.rms_eps, &mut h);
        matmul(layer.gate.data(bytes), c.d_ff, d, &h, n, &mut gate);
        matmul(layer.up.data(bytes), c.d_ff, d, &h, n, &mut up);
        maybe_pause(pause).await;
        ops::swiglu(&mut gate, &up);
        matmul(layer.down.data(bytes), d, c.d_ff, &gate, n, &mut o);
        add(&mut x, &o);
        maybe_pause(pause).await;
    }
    cache.len = n_past + n;
    let m = n - logits_from;
    if m == 0 {
        return;
    }
    let mut hn = vec![0f32; m * d];
    ops::rms_norm(&x[logits_from * d..], &w.output_norm, c.rms_eps, &mut hn);
    let start = logits.len();
    logits.resize(start + m * c.vocab_size, 0.0);
    matmul(
        w.output.data(bytes),
        c.vocab_size,
        d,
        &hn,
        m,
        &mut logits[start..],
    );
}

/// A pause point: the attention half of a block, the gate and up products, and the down
/// product each end at one, so a long prefill still hands control back often.
async fn maybe_pause(pause: &mut impl Pause) {
    if pause.due() {
        pause.pause().await;
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, &b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// Causal grouped-query attention of the `n` new positions over `n_past + n` cached ones.
fn attention(
    c: &LlamaConfig,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n_past: usize,
    n: usize,
    out: &mut [f32],
) {
    let (hd, kv_dim) = (c.head_dim, c.kv_dim());
    let q_dim = c.n_heads * hd;
    let group = c.n_heads / c.n_kv_heads;
    let scale = 1.0 / (hd as f32).sqrt();
    let mut scores = Vec::with_capacity(n_past + n);
    for t in 0..n {
        let visible = n_past + t + 1;
        for head in 0..c.n_heads {
            let g = head / group;
            let qh = &q[t * q_dim + head * hd..][..hd];
            scores.clear();
            scores.extend(
                (0..visible).map(|j| matmul::dot(qh, &k[j * kv_dim + g * hd..][..hd]) * scale),
            );
            ops::softmax(&mut scores);
            let oh = &mut out[t * q_dim + head * hd..][..hd];
            oh.fill(0.0);
            for (j, &p) in scores.iter().enumerate() {
                for (o, &vv) in oh.iter_mut().zip(&v[j * kv_dim + g * hd..][..hd]) {
                    *o += p * vv;
                }
            }
        }
    }
}
