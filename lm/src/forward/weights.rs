//! The model's tensors as the forward pass reads them: byte ranges of quantized blocks in
//! the file (or in the lead worker's [`ShardFile`], the whole file packed), small vectors (norm
//! weights) copied out as f32.

use super::matmul::WeightData;
use crate::config::LlamaConfig;
use crate::error::LoadError;
use crate::gguf::{GgmlType, Gguf, GgufError, TensorInfo, dequantize_q4_1, dequantize_q8_0};
use crate::shard::ShardFile;
use std::ops::Range;

/// Where the tensors' bytes are: the whole file, or the lead worker's share of it (every
/// tensor, packed).
#[derive(Clone, Copy)]
pub(crate) enum Layout<'a> {
    /// The bytes are the whole file.
    Whole,
    /// The bytes are this share's, packed.
    Shard(&'a ShardFile),
}

impl Layout<'_> {
    /// Where `file` (a range of the file) lies in the bytes.
    fn locate(&self, file: Range<usize>, name: &str) -> Result<Range<usize>, LoadError> {
        match self {
            Layout::Whole => Ok(file),
            Layout::Shard(s) => s.locate(file).ok_or_else(|| {
                LoadError::Config(format!("this worker's share of the model lacks {name}"))
            }),
        }
    }
}

/// A `rows × cols` weight matrix.
#[derive(Debug)]
pub(crate) struct Matrix {
    ty: GgmlType,
    rows: usize,
    /// The matrix's bytes in the file.
    file: Range<usize>,
    /// Where its bytes lie in the bytes the weights read.
    range: Range<usize>,
    cols: usize,
    /// F32 matrices, copied out of the file (which need not align them).
    dense: Option<Vec<f32>>,
    /// Q4_0 matrices rewritten as Q4_1 blocks at load (exactly the same weights).
    as_q4_1: Option<Vec<u8>>,
}

impl Matrix {
    /// Matrix `name` of `rows × cols`.
    fn new(
        g: &Gguf,
        bytes: &[u8],
        layout: Layout<'_>,
        name: &str,
        (rows, cols): (usize, usize),
    ) -> Result<Self, LoadError> {
        let t = tensor(g, name)?;
        if t.dims != [cols as u64, rows as u64] {
            return Err(LoadError::Config(format!(
                "tensor {name:?} has shape {:?}, expected [{cols}, {rows}]",
                t.dims
            )));
        }
        let range = layout.locate(t.range(), name)?;
        let as_q4_1 = (t.ty == GgmlType::Q4_0)
            .then(|| quant::q4_0_as_q4_1(&bytes[range.clone()]))
            .flatten();
        let dense = (t.ty == GgmlType::F32).then(|| {
            let mut out = vec![0f32; rows * cols];
            t.ty.dequantize(&bytes[range.clone()], &mut out);
            out
        });
        Ok(Matrix {
            ty: t.ty,
            rows,
            file: t.range(),
            range,
            cols,
            dense,
            as_q4_1,
        })
    }

    /// The whole matrix's bytes in the file, where the products read them as they are
    /// there (not rewritten or decoded at load): how a split product names it to helpers.
    pub(crate) fn in_file(&self) -> Option<Range<usize>> {
        (self.dense.is_none() && self.as_q4_1.is_none()).then(|| self.file.clone())
    }

    /// Columns (the input width of the product).
    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    /// Rows (the output width of the product).
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// The whole matrix decoded to f32, row-major (for engines that multiply floats).
    pub(crate) fn to_f32(&self, bytes: &[u8]) -> Vec<f32> {
        let (ty, raw) = match self.data(bytes) {
            WeightData::F32(v) => return v.to_vec(),
            WeightData::Q4_1(b) => (GgmlType::Q4_1, b),
            WeightData::Q8_0(b) => (GgmlType::Q8_0, b),
            WeightData::Decoded(ty, b) => (ty, b),
        };
        let mut out = vec![0f32; raw.len() / ty.block_bytes() * ty.block_len()];
        ty.dequantize(raw, &mut out);
        out
    }

    /// The matrix's quantized blocks and their type, as the products read them (Q4_0
    /// rewritten as Q4_1); `None` for F32.
    #[cfg(all(feature = "burn-wgpu", not(feature = "burn-fusion")))]
    pub(crate) fn blocks<'a>(&'a self, bytes: &'a [u8]) -> Option<(GgmlType, &'a [u8])> {
        match self.data(bytes) {
            WeightData::F32(_) => None,
            WeightData::Q4_1(b) => Some((GgmlType::Q4_1, b)),
            WeightData::Q8_0(b) => Some((GgmlType::Q8_0, b)),
            WeightData::Decoded(ty, b) => Some((ty, b)),
        }
    }

    pub(crate) fn data<'a>(&'a self, bytes: &'a [u8]) -> WeightData<'a> {
        if let Some(b) = &self.as_q4_1 {
            return WeightData::Q4_1(b);
        }
        match (&self.dense, self.ty) {
            (Some(v), _) => WeightData::F32(v),
            (None, GgmlType::Q4_1) => WeightData::Q4_1(&bytes[self.range.clone()]),
            (None, GgmlType::Q8_0) => WeightData::Q8_0(&bytes[self.range.clone()]),
            (None, ty) => WeightData::Decoded(ty, &bytes[self.range.clone()]),
        }
    }
}

fn tensor<'a>(g: &'a Gguf, name: &str) -> Result<&'a TensorInfo, LoadError> {
    g.tensor(name)
        .ok_or_else(|| GgufError::MissingTensor(name.into()).into())
}

fn vector(
    g: &Gguf,
    bytes: &[u8],
    layout: Layout<'_>,
    name: &str,
    len: usize,
) -> Result<Vec<f32>, LoadError> {
    let t = tensor(g, name)?;
    if t.dims != [len as u64] {
        return Err(LoadError::Config(format!(
            "tensor {name:?} has shape {:?}, expected [{len}]",
            t.dims
        )));
    }
    let mut out = vec![0f32; len];
    t.ty.dequantize(&bytes[layout.locate(t.range(), name)?], &mut out);
    Ok(out)
}

/// An optional bias vector (`blk.N.attn_q.bias` and its kin: qwen2 has them on q, k and v;
/// llama.cpp reads them for llama files too).
fn optional_vector(
    g: &Gguf,
    bytes: &[u8],
    layout: Layout<'_>,
    name: &str,
    len: usize,
) -> Result<Option<Vec<f32>>, LoadError> {
    match g.tensor(name) {
        None => Ok(None),
        Some(_) => vector(g, bytes, layout, name, len).map(Some),
    }
}

/// One transformer block.
#[derive(Debug)]
pub(crate) struct Layer {
    pub(crate) attn_norm: Vec<f32>,
    pub(crate) wq: Matrix,
    pub(crate) wk: Matrix,
    pub(crate) wv: Matrix,
    pub(crate) wo: Matrix,
    /// Biases of the q, k, v and output products, where the file has them.
    pub(crate) bq: Option<Vec<f32>>,
    pub(crate) bk: Option<Vec<f32>>,
    pub(crate) bv: Option<Vec<f32>>,
    pub(crate) bo: Option<Vec<f32>>,
    /// RMSNorm weights applied to each q and k head before RoPE (qwen3).
    pub(crate) q_norm: Option<Vec<f32>>,
    pub(crate) k_norm: Option<Vec<f32>>,
    pub(crate) ffn_norm: Vec<f32>,
    pub(crate) gate: Matrix,
    pub(crate) up: Matrix,
    pub(crate) down: Matrix,
}

/// All tensors of the model.
#[derive(Debug)]
pub(crate) struct Weights {
    pub(crate) embd: Matrix,
    pub(crate) layers: Vec<Layer>,
    pub(crate) output_norm: Vec<f32>,
    pub(crate) output: Matrix,
    /// Whether `output` is `embd` (the file has no `output.weight`: tied embeddings).
    pub(crate) output_tied: bool,
    /// How activations enter the quantized products.
    pub(crate) activations: super::Activations,
}

impl Weights {
    /// Finds and checks every tensor the configuration calls for, in `bytes` laid out as
    /// `layout` says.
    pub(crate) fn new(
        g: &Gguf,
        bytes: &[u8],
        c: &LlamaConfig,
        layout: Layout<'_>,
    ) -> Result<Self, LoadError> {
        let (d, q_dim, kv, ff) = (c.d_model, c.n_heads * c.head_dim, c.kv_dim(), c.d_ff);
        let layers = (0..c.n_layers)
            .map(|i| {
                let m = |n: &str, rows, cols| {
                    let name = format!("blk.{i}.{n}.weight");
                    Matrix::new(g, bytes, layout, &name, (rows, cols))
                };
                let vector = |n: &str, len| vector(g, bytes, layout, n, len);
                let bias = |n: &str, len| {
                    optional_vector(g, bytes, layout, &format!("blk.{i}.{n}.bias"), len)
                };
                let head_norm = |n: &str| {
                    let name = format!("blk.{i}.{n}.weight");
                    optional_vector(g, bytes, layout, &name, c.head_dim)
                };
                Ok(Layer {
                    attn_norm: vector(&format!("blk.{i}.attn_norm.weight"), d)?,
                    wq: m("attn_q", q_dim, d)?,
                    wk: m("attn_k", kv, d)?,
                    wv: m("attn_v", kv, d)?,
                    wo: m("attn_output", d, q_dim)?,
                    bq: bias("attn_q", q_dim)?,
                    bk: bias("attn_k", kv)?,
                    bv: bias("attn_v", kv)?,
                    bo: bias("attn_output", d)?,
                    q_norm: head_norm("attn_q_norm")?,
                    k_norm: head_norm("attn_k_norm")?,
                    ffn_norm: vector(&format!("blk.{i}.ffn_norm.weight"), d)?,
                    gate: m("ffn_gate", ff, d)?,
                    up: m("ffn_up", ff, d)?,
                    down: m("ffn_down", d, ff)?,
                })
            })
            .collect::<Result<_, LoadError>>()?;
        let output_tied = g.tensor("output.weight").is_none();
        let output_name = if output_tied {
            "token_embd.weight"
        } else {
            "output.weight"
        };
        let shape = (c.vocab_size, d);
        Ok(Weights {
            embd: Matrix::new(g, bytes, layout, "token_embd.weight", shape)?,
            layers,
            output_norm: vector(g, bytes, layout, "output_norm.weight", d)?,
            output: Matrix::new(g, bytes, layout, output_name, shape)?,
            output_tied,
            activations: super::Activations::default(),
        })
    }

    /// Writes the embedding of token `t` into `out`.
    pub(crate) fn embedding_row(&self, bytes: &[u8], t: usize, out: &mut [f32]) {
        let cols = self.embd.cols;
        match self.embd.data(bytes) {
            WeightData::F32(v) => out.copy_from_slice(&v[t * cols..(t + 1) * cols]),
            WeightData::Q4_1(b) => {
                let rb = cols / 32 * crate::gguf::BlockQ4_1::BYTES;
                dequantize_q4_1(&b[t * rb..(t + 1) * rb], out)
            }
            WeightData::Q8_0(b) => {
                let rb = cols / 32 * crate::gguf::BlockQ8_0::BYTES;
                dequantize_q8_0(&b[t * rb..(t + 1) * rb], out)
            }
            WeightData::Decoded(ty, b) => {
                let rb = cols / ty.block_len() * ty.block_bytes();
                ty.dequantize(&b[t * rb..(t + 1) * rb], out)
            }
        }
    }
}
