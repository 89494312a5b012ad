//! The llama hyper-parameters, read from `<arch>.*` GGUF metadata.

use crate::error::LoadError;
use crate::gguf::{Gguf, GgufError};

/// Shape and constants of a llama-architecture model.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    /// Transformer blocks (`llama.block_count`).
    pub n_layers: usize,
    /// Model width (`llama.embedding_length`).
    pub d_model: usize,
    /// Query heads (`llama.attention.head_count`).
    pub n_heads: usize,
    /// Key/value heads (`llama.attention.head_count_kv`; grouped-query attention).
    pub n_kv_heads: usize,
    /// Width of one head (`llama.attention.key_length`, else `d_model / n_heads`).
    pub head_dim: usize,
    /// Hidden width of the SwiGLU feed-forward (`llama.feed_forward_length`).
    pub d_ff: usize,
    /// Dimensions of each head that RoPE rotates (`llama.rope.dimension_count`).
    pub n_rot: usize,
    /// RoPE frequency base (`llama.rope.freq_base`, default 10000).
    pub rope_base: f32,
    /// RMSNorm epsilon (`llama.attention.layer_norm_rms_epsilon`, default 1e-5).
    pub rms_eps: f32,
    /// Longest context the model was trained for (`llama.context_length`).
    pub context_length: usize,
    /// Vocabulary size (rows of `token_embd.weight`).
    pub vocab_size: usize,
}

/// Largest value accepted for any dimension: keeps a hostile file from asking for
/// absurd buffers (the tensors must exist in the file as well).
const MAX_DIM: u64 = 1 << 20;

impl LlamaConfig {
    /// Reads the configuration; only `general.architecture = "llama"` is supported.
    pub fn from_gguf(g: &Gguf) -> Result<Self, LoadError> {
        let arch = g.get_str("general.architecture")?;
        if arch != "llama" {
            return Err(LoadError::Config(format!(
                "architecture {arch:?} is not supported (only \"llama\")"
            )));
        }
        let dim = |key: &str| -> Result<usize, LoadError> {
            let v = g.get_u64(&format!("llama.{key}"))?;
            if v == 0 || v > MAX_DIM {
                return Err(LoadError::Config(format!(
                    "llama.{key} = {v} is out of range"
                )));
            }
            Ok(v as usize)
        };
        let optional = |key: &str| -> Result<Option<usize>, LoadError> {
            match g.get(&format!("llama.{key}")) {
                None => Ok(None),
                Some(_) => dim(key).map(Some),
            }
        };
        let float = |key: &str, default: f64| -> Result<f64, GgufError> {
            match g.get(key) {
                None => Ok(default),
                Some(_) => g.get_f64(key),
            }
        };
        let n_layers = dim("block_count")?;
        let d_model = dim("embedding_length")?;
        let n_heads = dim("attention.head_count")?;
        let n_kv_heads = optional("attention.head_count_kv")?.unwrap_or(n_heads);
        let head_dim = optional("attention.key_length")?.unwrap_or(d_model / n_heads);
        let n_rot = optional("rope.dimension_count")?.unwrap_or(head_dim);
        let rope_base = float("llama.rope.freq_base", 10000.0)? as f32;
        let rms_eps = float("llama.attention.layer_norm_rms_epsilon", 1e-5)? as f32;
        let embd = g
            .tensor("token_embd.weight")
            .ok_or_else(|| GgufError::MissingTensor("token_embd.weight".into()))?;
        let vocab_size = if embd.dims.len() == 2 {
            embd.dims[1] as usize
        } else {
            0
        };
        let c = LlamaConfig {
            n_layers,
            d_model,
            n_heads,
            n_kv_heads,
            head_dim,
            d_ff: dim("feed_forward_length")?,
            n_rot,
            rope_base,
            rms_eps,
            context_length: dim("context_length")?,
            vocab_size,
        };
        let bad = |m: String| Err(LoadError::Config(m));
        if n_heads % n_kv_heads != 0 {
            return bad(format!(
                "{n_heads} heads are not a multiple of {n_kv_heads} key/value heads"
            ));
        }
        if head_dim * n_heads != d_model {
            return bad(format!(
                "{n_heads} heads of width {head_dim} do not make the width {d_model}"
            ));
        }
        if n_rot > head_dim || n_rot % 2 != 0 {
            return bad(format!("RoPE over {n_rot} of {head_dim} head dimensions"));
        }
        if !(rope_base.is_finite() && rope_base > 0.0 && rms_eps.is_finite() && rms_eps >= 0.0) {
            return bad(format!(
                "RoPE base {rope_base} or RMSNorm epsilon {rms_eps} is out of range"
            ));
        }
        if vocab_size == 0 {
            return bad(format!(
                "token_embd.weight has shape {:?}, expected [d_model, vocab]",
                embd.dims
            ));
        }
        Ok(c)
    }

    /// Width of the keys (and values) of one position: `n_kv_heads · head_dim`.
    pub fn kv_dim(&self) -> usize {
        self.n_kv_heads * self.head_dim
    }
}
