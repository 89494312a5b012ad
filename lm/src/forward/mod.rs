//! The llama forward pass on the CPU, computing on the quantized blocks in place.
//!
//! Per block: `h = RMSNorm(x)·attn_norm`; `q, k, v = Wq h + bq, Wk h + bk, Wv h + bv` (the
//! biases where the file has them: qwen2); each q and k head RMS-normed where the file says
//! so (qwen3); RoPE on q and k, in the architecture's pairing;
//! grouped-query causal attention over the KV cache; `x += Wo·attn (+ bo)`;
//! `h = RMSNorm(x)·ffn_norm`; `x += Wdown·(SiLU(Wgate h) ⊙ Wup h)`. After the last block,
//! `logits = Wout·(RMSNorm(x)·output_norm)`, with `Wout = token_embd` when the file has no
//! `output.weight` (tied embeddings). This is the reference the GPU path is checked against.

/// The dot-product kernels (the `cpu-kernels` crate), under their old path.
pub use cpu_kernels as kernels;
mod kv_cache;
pub(crate) mod matmul;
mod ops;
mod parallel;
mod pause;
pub mod split;
pub(crate) mod weights;

pub use kernels::{Activations, Kernels};
pub use kv_cache::{KvCache, PAGE};
pub(crate) use ops::log_softmax;
#[cfg(all(test, feature = "burn"))]
pub(crate) use ops::rope;
#[cfg(feature = "burn")]
pub(crate) use ops::rope_angles;
pub use parallel::{map as parallel_map, run as run_on_pool, set_threads, threads};
pub use pause::{NoPause, Pause};
#[cfg(feature = "burn")]
pub(crate) use weights::Matrix;
pub(crate) use weights::{Layout, Weights};

use crate::config::LlamaConfig;
use sampler_core::{LmError, TokenId};
use split::{Product, matmul, matmul_set};

/// Tokens run through the blocks together; bounds the scratch memory of long prompts.
const CHUNK: usize = 64;

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
    check(c, cache, tokens)?;
    let mut logits = Vec::with_capacity(tokens.len().saturating_sub(logits_from) * c.vocab_size);
    for (i, chunk) in tokens.chunks(CHUNK).enumerate() {
        let start = i * CHUNK;
        let from = logits_from.saturating_sub(start).min(chunk.len());
        let mut segs = [Segment {
            cache: &mut *cache,
            tokens: chunk,
            logits_from: from,
        }];
        forward_chunk(c, w, bytes, &mut segs, &mut logits, pause).await;
    }
    Ok(logits)
}

/// Runs several sequences at once, each `tokens[i]` after the positions in `caches[i]`
/// (appending theirs), and returns the logits after the last token of each: one pass
/// whose matrix products take every sequence's tokens together, attention per sequence.
/// Every token list must be non-empty.
pub(crate) async fn forward_batch(
    c: &LlamaConfig,
    w: &Weights,
    bytes: &[u8],
    caches: &mut [&mut KvCache],
    tokens: &[&[TokenId]],
    pause: &mut impl Pause,
) -> Result<Vec<Vec<f32>>, LmError> {
    for (cache, t) in caches.iter().zip(tokens) {
        check(c, cache, t)?;
        if t.is_empty() {
            return Err(LmError(
                "a sequence of the batch has no token to run".into(),
            ));
        }
    }
    let mut out = vec![Vec::new(); tokens.len()];
    // Rounds of up to CHUNK tokens of each unfinished sequence.
    let rounds = tokens
        .iter()
        .map(|t| t.len().div_ceil(CHUNK))
        .max()
        .unwrap_or(0);
    for round in 0..rounds {
        let start = round * CHUNK;
        let mut idx = Vec::new();
        let mut segs = Vec::new();
        for (i, (cache, t)) in caches.iter_mut().zip(tokens).enumerate() {
            if start < t.len() {
                let chunk = &t[start..(start + CHUNK).min(t.len())];
                let last = start + chunk.len() == t.len();
                idx.push((i, last));
                segs.push(Segment {
                    cache,
                    tokens: chunk,
                    logits_from: if last { chunk.len() - 1 } else { chunk.len() },
                });
            }
        }
        let mut logits = Vec::new();
        forward_chunk(c, w, bytes, &mut segs, &mut logits, pause).await;
        let mut rows = logits.chunks_exact(c.vocab_size);
        for (i, last) in idx {
            if last {
                out[i] = rows.next().map(<[f32]>::to_vec).unwrap_or_default();
            }
        }
    }
    Ok(out)
}

/// The context and vocabulary checks of a run of `tokens` after `cache`.
fn check(c: &LlamaConfig, cache: &KvCache, tokens: &[TokenId]) -> Result<(), LmError> {
    check_run(c, cache.len, tokens)
}

/// The context and vocabulary checks of a run of `tokens` after `past` positions (every
/// engine's).
pub(crate) fn check_run(c: &LlamaConfig, past: usize, tokens: &[TokenId]) -> Result<(), LmError> {
    let total = past + tokens.len();
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
    Ok(())
}

/// One sequence's share of a pass: its cache, the tokens run after it, and from which
/// of them logits are wanted.
struct Segment<'a> {
    cache: &'a mut KvCache,
    tokens: &'a [TokenId],
    logits_from: usize,
}

/// One pass of the blocks over every segment's tokens (rows stacked segment after
/// segment), appending the logits of each segment's rows from its `logits_from` on.
async fn forward_chunk(
    c: &LlamaConfig,
    w: &Weights,
    bytes: &[u8],
    segs: &mut [Segment<'_>],
    logits: &mut Vec<f32>,
    pause: &mut impl Pause,
) {
    let (d, kv_dim, hd) = (c.d_model, c.kv_dim(), c.head_dim);
    let q_dim = c.n_heads * hd;
    let act = w.activations;
    let n: usize = segs.iter().map(|s| s.tokens.len()).sum();
    // Row ranges of the segments and the position of every row.
    let mut ranges = Vec::with_capacity(segs.len());
    let mut angles = Vec::with_capacity(n);
    let mut x = vec![0f32; n * d];
    let mut row = 0;
    for s in segs.iter() {
        ranges.push(row..row + s.tokens.len());
        for (t, &tok) in s.tokens.iter().enumerate() {
            w.embedding_row(bytes, tok as usize, &mut x[row * d..(row + 1) * d]);
            angles.push(ops::rope_angles(s.cache.len + t, &c.rope_freqs));
            row += 1;
        }
    }
    let mut h = vec![0f32; n * d];
    let mut q = vec![0f32; n * q_dim];
    let mut k = vec![0f32; n * kv_dim];
    let mut v = vec![0f32; n * kv_dim];
    let mut attn = vec![0f32; n * q_dim];
    // Attention's output head by head (each task's rows together), copied into `attn`.
    let mut by_head = vec![0f32; n * q_dim];
    let mut o = vec![0f32; n * d];
    let mut gate = vec![0f32; n * c.d_ff];
    let mut up = vec![0f32; n * c.d_ff];
    for (l, layer) in w.layers.iter().enumerate() {
        ops::rms_norm(&x, &layer.attn_norm, c.rms_eps, &mut h);
        let qkv = &mut [
            Product::of(&layer.wq, bytes, &mut q),
            Product::of(&layer.wk, bytes, &mut k),
            Product::of(&layer.wv, bytes, &mut v),
        ];
        matmul_set(qkv, d, &h, n, act);
        for (out, bias) in [
            (&mut q, &layer.bq),
            (&mut k, &layer.bk),
            (&mut v, &layer.bv),
        ] {
            if let Some(b) = bias {
                ops::add_bias(out, b);
            }
        }
        for (out, norm) in [(&mut q, &layer.q_norm), (&mut k, &layer.k_norm)] {
            if let Some(w) = norm {
                ops::rms_norm_in_place(out, w, c.rms_eps);
            }
        }
        for (t, a) in angles.iter().enumerate() {
            ops::rope(&mut q[t * q_dim..(t + 1) * q_dim], hd, a, c.rope_style);
            ops::rope(&mut k[t * kv_dim..(t + 1) * kv_dim], hd, a, c.rope_style);
        }
        for (s, r) in segs.iter_mut().zip(&ranges) {
            let rows = r.start * kv_dim..r.end * kv_dim;
            let n_past = s.cache.len;
            s.cache.write(l, n_past, &k[rows.clone()], &v[rows]);
        }
        // Each segment attends to its own cache: one task per (segment, head) on the pool,
        // so that a single sequence's heads run in parallel too; each task writes its
        // head's rows into its own piece of `by_head`, copied into `attn` after.
        let mut jobs = Vec::with_capacity(segs.len() * c.n_heads);
        let mut rest = by_head.as_mut_slice();
        for (s, r) in segs.iter().zip(&ranges) {
            let (ck, cv) = s.cache.rows(l);
            let q = &q[r.start * q_dim..r.end * q_dim];
            for head in 0..c.n_heads {
                let (out, tail) = rest.split_at_mut(r.len() * hd);
                rest = tail;
                jobs.push((r.start, head, q, ck, cv, s.cache.len, out));
            }
        }
        parallel::for_each_mut(&mut jobs, |_, (_, head, q, ck, cv, n_past, out)| {
            attention_head(c, *head, q, *ck, *cv, *n_past, out)
        });
        for (start, head, _, _, _, _, out) in &jobs {
            for (t, row) in out.chunks_exact(hd).enumerate() {
                attn[(start + t) * q_dim + head * hd..][..hd].copy_from_slice(row);
            }
        }
        matmul(Product::of(&layer.wo, bytes, &mut o), q_dim, &attn, n, act);
        if let Some(b) = &layer.bo {
            ops::add_bias(&mut o, b);
        }
        add(&mut x, &o);
        maybe_pause(pause).await;

        ops::rms_norm(&x, &layer.ffn_norm, c.rms_eps, &mut h);
        let gate_up = &mut [
            Product::of(&layer.gate, bytes, &mut gate),
            Product::of(&layer.up, bytes, &mut up),
        ];
        matmul_set(gate_up, d, &h, n, act);
        maybe_pause(pause).await;
        ops::swiglu(&mut gate, &up);
        matmul(
            Product::of(&layer.down, bytes, &mut o),
            c.d_ff,
            &gate,
            n,
            act,
        );
        add(&mut x, &o);
        maybe_pause(pause).await;
    }
    // The rows that want logits, in segment order.
    let mut hx = Vec::new();
    for (s, r) in segs.iter_mut().zip(&ranges) {
        s.cache.len += s.tokens.len();
        hx.extend_from_slice(&x[(r.start + s.logits_from) * d..r.end * d]);
    }
    let m = hx.len() / d;
    if m == 0 {
        return;
    }
    let mut hn = vec![0f32; m * d];
    ops::rms_norm(&hx, &w.output_norm, c.rms_eps, &mut hn);
    let start = logits.len();
    logits.resize(start + m * c.vocab_size, 0.0);
    let out = Product::of(&w.output, bytes, &mut logits[start..]);
    matmul(out, d, &hn, m, act);
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

/// Causal grouped-query attention of one query head for the new positions (`q` holds
/// all heads of each, `n_heads · head_dim` floats a position) over `n_past + t + 1`
/// cached ones for position `t`; `out` gets that head's `head_dim` floats per position.
#[allow(clippy::too_many_arguments)]
fn attention_head(
    c: &LlamaConfig,
    head: usize,
    q: &[f32],
    k: kv_cache::Rows<'_>,
    v: kv_cache::Rows<'_>,
    n_past: usize,
    out: &mut [f32],
) {
    let hd = c.head_dim;
    let q_dim = c.n_heads * hd;
    let g = head / (c.n_heads / c.n_kv_heads);
    let scale = 1.0 / (hd as f32).sqrt();
    let n = q.len() / q_dim;
    let kernels = Kernels::best();
    let stride = k.kv_dim();
    let mut scores = vec![0f32; n_past + n];
    for t in 0..n {
        let visible = n_past + t + 1;
        let qh = &q[t * q_dim + head * hd..][..hd];
        let visible_scores = &mut scores[..visible];
        // A page of the cache at a time (page `i` holds positions `PAGE·i..PAGE·(i + 1)`): its
        // rows hold this head's group at `g·hd`.
        for (i, s) in visible_scores.chunks_mut(kv_cache::PAGE).enumerate() {
            (kernels.f32_dots)(qh, &k.page(i)[g * hd..], stride, s);
        }
        for s in visible_scores.iter_mut() {
            *s *= scale;
        }
        ops::softmax(visible_scores);
        let oh = &mut out[t * hd..][..hd];
        oh.fill(0.0);
        for (i, probs) in visible_scores.chunks(kv_cache::PAGE).enumerate() {
            (kernels.f32_axpys)(probs, &v.page(i)[g * hd..], stride, oh);
        }
    }
}
