//! [`Attention`]: causal grouped-query attention over the KV cache, writing each head's
//! result or (folding the output product in) each head's share of the output product;
//! [`attention_reference`] and [`attention_shares_reference`] on the CPU.

use crate::error::GpuError;
use crate::format::WeightFormat;
use crate::gpu::Gpu;
use crate::kv_format::KvFormat;
use crate::step;

/// Shape of the attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    /// Query heads.
    pub n_heads: usize,
    /// Key/value heads (divides `n_heads`).
    pub n_kv_heads: usize,
    /// Width of a head.
    pub head_dim: usize,
    /// Positions one sequence's cache (a slot) and the scratch hold.
    pub max_ctx: usize,
}

impl AttentionShape {
    /// Floats of the scores scratch for `tokens` tokens per run.
    pub fn scratch_len(&self, tokens: usize) -> usize {
        tokens * self.n_heads * self.max_ctx
    }
}

/// Where an [`Attention`] kernel puts each head's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttentionOutput {
    /// The heads' results, `n × n_heads·head_dim` (the output product is a dispatch of its
    /// own).
    Heads,
    /// Each head's result times that head's columns of the output matrix (in this
    /// format): `n × n_heads` shares of `out_rows` floats, whose sum over heads is the
    /// output product. The next product adds them to its input
    /// ([`crate::MatVecInput::RmsNormedPlusShares`]) and down adds them to the residual
    /// ([`crate::MatVecOutput::AddShares`]): one dispatch a block fewer.
    Shares(WeightFormat),
}

/// The attention kernel.
#[derive(Debug)]
pub struct Attention {
    pipeline: wgpu::ComputePipeline,
    /// What the kernel writes: which of `bind` and `bind_shares` fits it.
    output: AttentionOutput,
    /// Names the kernel in profiles.
    label: String,
}

impl Attention {
    /// Compiles the kernel for caches holding f32.
    pub async fn new(gpu: &Gpu) -> Result<Self, GpuError> {
        Attention::with_cache(gpu, KvFormat::F32).await
    }

    /// Compiles the kernel for caches in format `kv`.
    pub async fn with_cache(gpu: &Gpu, kv: KvFormat) -> Result<Self, GpuError> {
        Attention::with_output(gpu, kv, AttentionOutput::Heads).await
    }

    /// Compiles the kernel for caches in format `kv`, putting its results as `output`
    /// says.
    pub async fn with_output(
        gpu: &Gpu,
        kv: KvFormat,
        output: AttentionOutput,
    ) -> Result<Self, GpuError> {
        let (weights, put) = match output {
            AttentionOutput::Heads => ("", include_str!("wgsl/attention_out_heads.wgsl")),
            AttentionOutput::Shares(f) => {
                (f.wgsl(), include_str!("wgsl/attention_out_shares.wgsl"))
            }
        };
        let src = [
            kv.wgsl(),
            step::WGSL,
            put,
            weights,
            include_str!("wgsl/attention.wgsl"),
        ]
        .join("\n");
        let label = match output {
            AttentionOutput::Heads => "attention".to_string(),
            AttentionOutput::Shares(f) => format!("attention + output product shares {f:?}"),
        };
        Ok(Attention {
            pipeline: gpu.pipeline(&label, &src).await?,
            output,
            label,
        })
    }

    /// The uniform of a shape.
    pub fn dims(gpu: &Gpu, s: &AttentionShape) -> Result<wgpu::Buffer, GpuError> {
        Attention::dims_with_out_rows(gpu, s, 0)
    }

    /// Whether heads `head_dim` wide can fold the output product in
    /// ([`AttentionOutput::Shares`]): a whole number of 32-column blocks (each head's
    /// columns are whole blocks of the matrix), at most 256 (the workgroup array
    /// `head_out` in `attention_out_shares.wgsl`).
    pub fn folds_heads(head_dim: usize) -> bool {
        head_dim.is_multiple_of(32) && head_dim <= 256
    }

    /// The uniform of a shape whose heads' shares of an output product of `out_rows` rows
    /// are written ([`AttentionOutput::Shares`]; heads as [`Attention::folds_heads`]
    /// allows). A shares kernel given [`Attention::dims`] would write no shares.
    pub fn dims_shares(
        gpu: &Gpu,
        s: &AttentionShape,
        out_rows: usize,
    ) -> Result<wgpu::Buffer, GpuError> {
        if !Attention::folds_heads(s.head_dim) || out_rows == 0 {
            return Err(GpuError::Shape(format!(
                "the output product folds into attention for heads of 32-column blocks up to 256 wide and some rows, not heads of {} and {out_rows} rows",
                s.head_dim
            )));
        }
        Attention::dims_with_out_rows(gpu, s, out_rows)
    }

    fn dims_with_out_rows(
        gpu: &Gpu,
        s: &AttentionShape,
        out_rows: usize,
    ) -> Result<wgpu::Buffer, GpuError> {
        if s.n_kv_heads == 0 || !s.n_heads.is_multiple_of(s.n_kv_heads) {
            return Err(GpuError::Shape(format!(
                "{} heads over {} key/value heads",
                s.n_heads, s.n_kv_heads
            )));
        }
        let scale = 1.0 / (s.head_dim as f32).sqrt();
        Ok(gpu.uniform(
            "attention dims",
            &[
                s.n_heads as u32,
                (s.n_heads / s.n_kv_heads) as u32,
                s.head_dim as u32,
                (s.n_kv_heads * s.head_dim) as u32,
                s.max_ctx as u32,
                scale.to_bits(),
                out_rows as u32,
                0,
            ],
        ))
    }

    /// Binds queries (`n × n_heads·head_dim`), key and value caches (rows of `kv_dim`:
    /// `max_ctx` for each sequence's slot, which the step's places locate), the scores
    /// scratch, the output, dims and step. An error for an [`AttentionOutput::Shares`]
    /// kernel (its bindings are [`Attention::bind_shares`]'s).
    #[allow(clippy::too_many_arguments)]
    pub fn bind(
        &self,
        gpu: &Gpu,
        q: &wgpu::Buffer,
        k: &wgpu::Buffer,
        v: &wgpu::Buffer,
        scratch: &wgpu::Buffer,
        out: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> Result<wgpu::BindGroup, GpuError> {
        if self.output != AttentionOutput::Heads {
            return Err(self.wrong_bind("bind_shares"));
        }
        Ok(gpu.bind(&self.pipeline, &[q, k, v, scratch, out, dims, step]))
    }

    /// Binds an [`AttentionOutput::Shares`] kernel: as [`Attention::bind`], the shares
    /// (`n × n_heads × out_rows`) in place of the output and the output matrix's blocks
    /// beside them. An error for an [`AttentionOutput::Heads`] kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn bind_shares(
        &self,
        gpu: &Gpu,
        q: &wgpu::Buffer,
        (k, v): (&wgpu::Buffer, &wgpu::Buffer),
        scratch: &wgpu::Buffer,
        shares: &wgpu::Buffer,
        weights: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> Result<wgpu::BindGroup, GpuError> {
        if self.output == AttentionOutput::Heads {
            return Err(self.wrong_bind("bind"));
        }
        let buffers = [q, k, v, scratch, shares, dims, step, weights];
        Ok(gpu.bind(&self.pipeline, &buffers))
    }

    /// The error for binding this kernel as the other form: `fits` names the right call.
    fn wrong_bind(&self, fits: &str) -> GpuError {
        GpuError::Shape(format!(
            "the {} kernel writes {:?}: bind it with Attention::{fits}",
            self.label, self.output
        ))
    }

    /// Records the attention of `tokens` tokens.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        n_heads: usize,
        tokens: usize,
    ) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(pass, &self.label, n_heads as u32, tokens as u32, 1);
    }
}

/// CPU reference: attention of `n` new tokens (`q`: `n × n_heads·head_dim`) after
/// `n_past` cached positions (`k`, `v`: `(n_past + n) × kv_dim`).
pub fn attention_reference(
    s: &AttentionShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n_past: usize,
    n: usize,
) -> Vec<f32> {
    let hd = s.head_dim;
    let kv_dim = s.n_kv_heads * hd;
    let q_dim = s.n_heads * hd;
    let group = s.n_heads / s.n_kv_heads;
    let scale = 1.0 / (hd as f32).sqrt();
    let mut out = vec![0f32; n * q_dim];
    for t in 0..n {
        let visible = n_past + t + 1;
        for h in 0..s.n_heads {
            let g = h / group;
            let qh = &q[t * q_dim + h * hd..][..hd];
            let scores: Vec<f32> = (0..visible)
                .map(|j| {
                    let kj = &k[j * kv_dim + g * hd..][..hd];
                    qh.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>() * scale
                })
                .collect();
            let mx = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = scores.iter().map(|s| (s - mx).exp()).collect();
            let sum: f32 = e.iter().sum();
            let oh = &mut out[t * q_dim + h * hd..][..hd];
            for (j, p) in e.iter().enumerate() {
                for (o, vv) in oh.iter_mut().zip(&v[j * kv_dim + g * hd..][..hd]) {
                    *o += p / sum * vv;
                }
            }
        }
    }
    out
}

/// CPU reference of [`AttentionOutput::Shares`]: each head's result
/// ([`attention_reference`]) times that head's columns of the `out_rows × n_heads·head_dim`
/// output matrix (`format`, `bytes`), `n × n_heads × out_rows`, accumulated in f64.
#[allow(clippy::too_many_arguments)]
pub fn attention_shares_reference(
    s: &AttentionShape,
    format: WeightFormat,
    bytes: &[u8],
    out_rows: usize,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n_past: usize,
    n: usize,
) -> Vec<f32> {
    let heads = attention_reference(s, q, k, v, n_past, n);
    let (hd, q_dim) = (s.head_dim, s.n_heads * s.head_dim);
    let w: Vec<Vec<f32>> = (0..out_rows)
        .map(|r| format.dequantize_row(bytes, r, q_dim))
        .collect();
    let mut shares = vec![0f32; n * s.n_heads * out_rows];
    for t in 0..n {
        for h in 0..s.n_heads {
            let oh = &heads[t * q_dim + h * hd..][..hd];
            for (r, row) in w.iter().enumerate() {
                let dot: f64 = row[h * hd..][..hd]
                    .iter()
                    .zip(oh)
                    .map(|(&a, &b)| a as f64 * b as f64)
                    .sum();
                shares[(t * s.n_heads + h) * out_rows + r] = dot as f32;
            }
        }
    }
    shares
}
