//! The transformer's hyper-parameters, read from `<arch>.*` GGUF metadata: the llama
//! family (SmolLM2, Llama 3 with its RoPE frequency factors), qwen2 (q/k/v biases, RoPE
//! over head halves) and qwen3 (RMSNorm of each q and k head).

use crate::error::LoadError;
use crate::gguf::{Gguf, GgufError};

/// The architectures this reader runs (`general.architecture`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// `llama`: SmolLM2, Llama 2/3, TinyLlama and other llama-shaped files.
    Llama,
    /// `qwen2`: Qwen2 and Qwen2.5 (biases on q, k and v; RoPE over head halves).
    Qwen2,
    /// `qwen3`: Qwen3 dense models (each q and k head RMS-normed before RoPE over halves;
    /// heads may be wider than `d_model / n_heads`).
    Qwen3,
}

impl Architecture {
    /// Every supported architecture, for error messages.
    pub const ALL: [Architecture; 3] = [
        Architecture::Llama,
        Architecture::Qwen2,
        Architecture::Qwen3,
    ];

    /// The `general.architecture` value, which is also the metadata keys' prefix.
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Llama => "llama",
            Architecture::Qwen2 => "qwen2",
            Architecture::Qwen3 => "qwen3",
        }
    }

    /// How this architecture pairs the dimensions RoPE turns (llama.cpp's rope type).
    pub fn rope_style(self) -> RopeStyle {
        match self {
            Architecture::Llama => RopeStyle::Adjacent,
            Architecture::Qwen2 | Architecture::Qwen3 => RopeStyle::Halves,
        }
    }
}

/// Which dimensions of a head RoPE turns together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Pairs `(2i, 2i+1)`: llama.cpp's "normal" mode (llama files, whose q/k rows the
    /// converter permuted so this equals Hugging Face's rotate-half).
    Adjacent,
    /// Pairs `(i, i + n_rot/2)`: llama.cpp's "neox" mode (qwen2 and qwen3, unpermuted rows).
    Halves,
}

/// Shape and constants of a llama-family model.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    /// Which architecture the file declares.
    pub arch: Architecture,
    /// Transformer blocks (`<arch>.block_count`).
    pub n_layers: usize,
    /// Model width (`<arch>.embedding_length`).
    pub d_model: usize,
    /// Query heads (`<arch>.attention.head_count`).
    pub n_heads: usize,
    /// Key/value heads (`<arch>.attention.head_count_kv`; grouped-query attention).
    pub n_kv_heads: usize,
    /// Width of one head (`<arch>.attention.key_length`, else `d_model / n_heads`).
    pub head_dim: usize,
    /// Hidden width of the SwiGLU feed-forward (`<arch>.feed_forward_length`).
    pub d_ff: usize,
    /// Dimensions of each head that RoPE rotates (`<arch>.rope.dimension_count`).
    pub n_rot: usize,
    /// RoPE frequency base (`<arch>.rope.freq_base`, default 10000).
    pub rope_base: f32,
    /// Which dimensions RoPE pairs.
    pub rope_style: RopeStyle,
    /// Angle per position of each of the `n_rot / 2` pairs: `base^(-2i/n_rot)`, times
    /// `1 / <arch>.rope.scaling.factor` for linear scaling, divided by Llama 3's
    /// `rope_freqs.weight[i]` when the file has that tensor (as llama.cpp applies them).
    pub rope_freqs: Vec<f64>,
    /// RMSNorm epsilon (`<arch>.attention.layer_norm_rms_epsilon`, default 1e-5).
    pub rms_eps: f32,
    /// Longest context the model was trained for (`<arch>.context_length`).
    pub context_length: usize,
    /// Vocabulary size (rows of `token_embd.weight`).
    pub vocab_size: usize,
}

/// Largest value accepted for any dimension: keeps a hostile file from asking for
/// absurd buffers (the tensors must exist in the file as well).
const MAX_DIM: u64 = 1 << 20;

impl LlamaConfig {
    /// Reads the configuration of a supported architecture; `bytes` (the whole file) is
    /// read only for Llama 3's `rope_freqs.weight`.
    pub fn from_gguf(g: &Gguf, bytes: &[u8]) -> Result<Self, LoadError> {
        let name = g.get_str("general.architecture")?;
        let arch = Architecture::ALL
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Architecture::ALL.iter().map(|a| a.name()).collect();
                LoadError::Config(format!(
                    "architecture {name:?} is not supported (supported: {})",
                    names.join(", ")
                ))
            })?;
        let p = arch.name();
        let dim = |key: &str| -> Result<usize, LoadError> {
            let v = g.get_u64(&format!("{p}.{key}"))?;
            if v == 0 || v > MAX_DIM {
                return Err(LoadError::Config(format!(
                    "{p}.{key} = {v} is out of range"
                )));
            }
            Ok(v as usize)
        };
        let optional = |key: &str| -> Result<Option<usize>, LoadError> {
            match g.get(&format!("{p}.{key}")) {
                None => Ok(None),
                Some(_) => dim(key).map(Some),
            }
        };
        let float = |key: &str, default: f64| -> Result<f64, GgufError> {
            let key = format!("{p}.{key}");
            match g.get(&key) {
                None => Ok(default),
                Some(_) => g.get_f64(&key),
            }
        };
        let n_layers = dim("block_count")?;
        let d_model = dim("embedding_length")?;
        let n_heads = dim("attention.head_count")?;
        let n_kv_heads = optional("attention.head_count_kv")?.unwrap_or(n_heads);
        let head_dim = optional("attention.key_length")?.unwrap_or(d_model / n_heads);
        let n_rot = optional("rope.dimension_count")?.unwrap_or(head_dim);
        let rope_base = float("rope.freq_base", 10000.0)? as f32;
        let rms_eps = float("attention.layer_norm_rms_epsilon", 1e-5)? as f32;
        let embd = g
            .tensor("token_embd.weight")
            .ok_or_else(|| GgufError::MissingTensor("token_embd.weight".into()))?;
        let vocab_size = if embd.dims.len() == 2 {
            embd.dims[1] as usize
        } else {
            0
        };
        let bad = |m: String| Err(LoadError::Config(m));
        if n_heads % n_kv_heads != 0 {
            return bad(format!(
                "{n_heads} heads are not a multiple of {n_kv_heads} key/value heads"
            ));
        }
        if head_dim * n_heads != d_model && arch != Architecture::Qwen3 {
            return bad(format!(
                "{n_heads} heads of width {head_dim} do not make the width {d_model}"
            ));
        }
        if (head_dim * n_heads) as u64 > MAX_DIM {
            return bad(format!("{n_heads} heads of width {head_dim} are too wide"));
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
        let rope_freqs = rope_freqs(g, bytes, p, n_rot, rope_base)?;
        Ok(LlamaConfig {
            arch,
            n_layers,
            d_model,
            n_heads,
            n_kv_heads,
            head_dim,
            d_ff: dim("feed_forward_length")?,
            n_rot,
            rope_base,
            rope_style: arch.rope_style(),
            rope_freqs,
            rms_eps,
            context_length: dim("context_length")?,
            vocab_size,
        })
    }

    /// Width of the keys (and values) of one position: `n_kv_heads · head_dim`.
    pub fn kv_dim(&self) -> usize {
        self.n_kv_heads * self.head_dim
    }
}

/// The angle per position of each RoPE pair (see [`LlamaConfig::rope_freqs`]). Scaling
/// other than none and linear (YaRN, LongRoPE) is refused by name.
fn rope_freqs(
    g: &Gguf,
    bytes: &[u8],
    p: &str,
    n_rot: usize,
    base: f32,
) -> Result<Vec<f64>, LoadError> {
    let bad = |m: String| Err(LoadError::Config(m));
    let key = format!("{p}.rope.scaling.type");
    let scaling = match g.get(&key) {
        None => "none",
        Some(_) => g.get_str(&key)?,
    };
    let scale = match scaling {
        "none" => 1.0,
        "linear" => {
            let key = format!("{p}.rope.scaling.factor");
            let factor = match g.get(&key) {
                None => 1.0,
                Some(_) => g.get_f64(&key)?,
            };
            if !(factor.is_finite() && factor > 0.0) {
                return bad(format!("{key} = {factor} is out of range"));
            }
            1.0 / factor
        }
        other => {
            return bad(format!(
                "RoPE scaling {other:?} is not supported (supported: none, linear, and Llama 3's rope_freqs)"
            ));
        }
    };
    let factors = match g.tensor("rope_freqs.weight") {
        None => vec![1.0; n_rot / 2],
        Some(t) => {
            if t.dims != [(n_rot / 2) as u64] {
                return bad(format!(
                    "tensor \"rope_freqs.weight\" has shape {:?}, expected [{}]",
                    t.dims,
                    n_rot / 2
                ));
            }
            // Checked first: `bytes` may be the first part of the file alone (the page's
            // header), which asks for more when the factors lie past it.
            g.tensor_data(bytes, "rope_freqs.weight")?;
            let f = t.to_f32(bytes);
            if let Some(v) = f.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
                return bad(format!(
                    "rope_freqs.weight holds {v}, expected positive factors"
                ));
            }
            f
        }
    };
    Ok(factors
        .iter()
        .enumerate()
        .map(|(i, &f)| (base as f64).powf(-2.0 * i as f64 / n_rot as f64) * scale / f as f64)
        .collect())
}
