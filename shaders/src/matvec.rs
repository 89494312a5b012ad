//! [`MatVec`]: quantized matrix times a small batch of vectors, and [`GetRows`]: rows of a
//! quantized matrix (the token embedding). CPU references: [`matvec_reference`].

use crate::error::GpuError;
use crate::format::WeightFormat;
use crate::gpu::Gpu;
use crate::kv_format::KvFormat;
use crate::step;

/// WGSL of the `Dims` uniform ([`MatVec::dims`]) the products and [`GetRows`] read.
const DIMS: &str = include_str!("wgsl/matvec_dims.wgsl");

/// Tokens per workgroup along z (`TB` in `matvec.wgsl`).
const TOKENS_PER_GROUP: u32 = 4;
/// Workgroups along x before rows wrap to y (WebGPU allows 65535 per dimension).
const MAX_X: u32 = 32768;

/// Where a [`MatVec`] reads its tokens and writes its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatVecMode {
    /// `out[t] = W x[t]` for `t < step.n`.
    Write,
    /// `out[t] += W x[t]` (residual connections).
    Accumulate,
    /// `out[t - step.first] = W x[t]` for `step.first <= t < step.n` (output head).
    Head,
    /// `out[cache row of t] = W x[t]` (keys and values into the cache; [`crate::Place`]).
    Cache,
}

impl MatVecMode {
    fn bits(self) -> u32 {
        match self {
            MatVecMode::Write => 0,
            MatVecMode::Accumulate => 1,
            MatVecMode::Head => 2,
            MatVecMode::Cache => 4,
        }
    }
}

/// How a [`MatVec`] (or a [`crate::MaskedSample`]) spreads its work over invocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatVecStrategy {
    /// A workgroup of 64 per row (per pair of rows for the two-row outputs), reduced in
    /// workgroup memory (GPUs).
    WorkgroupPerRow,
    /// As [`MatVecStrategy::WorkgroupPerRow`], reduced by subgroup sums first (GPUs whose
    /// device has the `subgroups` feature: [`Gpu::has_subgroups`]).
    SubgroupPerRow,
    /// One invocation per row (or pair of rows), no reduction across invocations (CPU
    /// adapters: lavapipe, SwiftShader).
    InvocationPerRow,
}

impl MatVecStrategy {
    /// The faster strategy for this adapter: one invocation per row on a CPU adapter, else
    /// a workgroup per row, reduced with subgroup sums where the device has them.
    pub fn for_gpu(gpu: &Gpu) -> Self {
        if gpu.is_cpu() {
            MatVecStrategy::InvocationPerRow
        } else if gpu.has_subgroups() {
            MatVecStrategy::SubgroupPerRow
        } else {
            MatVecStrategy::WorkgroupPerRow
        }
    }

    /// The same strategy without subgroup operations (for kernels that have no subgroup
    /// form).
    pub fn without_subgroups(self) -> Self {
        match self {
            MatVecStrategy::SubgroupPerRow => MatVecStrategy::WorkgroupPerRow,
            other => other,
        }
    }
}

/// Where a [`MatVec`]'s rows go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatVecOutput {
    /// One output, as the [`MatVecMode`] says.
    One,
    /// The matrix is q, k and v stacked: q's rows to one output, k's and v's to two caches
    /// at each token's cache row ([`crate::Place`]; [`MatVec::dims_qkv`],
    /// [`MatVec::bind_qkv`]).
    Qkv,
    /// As [`MatVecOutput::Qkv`], with each row's bias added and q's and k's rows turned by
    /// RoPE before they are stored: one workgroup computes the two rows of each RoPE pair
    /// ([`MatVec::fuse_dims`] gives the head width, rotated dimensions and pairing); k
    /// and v are stored in the given format.
    QkvRope(KvFormat),
    /// Gate and up stacked (`2 · d_ff` rows): `silu(gate) · up` written, `d_ff` per token,
    /// one workgroup per gate row and its up row.
    SwiGlu,
    /// Accumulated into the output (the residual) with the heads' shares of the output
    /// product at each row ([`crate::AttentionOutput::Shares`]; their count in
    /// [`MatVec::dims_shares`]): down adds the block's output product too.
    AddShares,
}

impl MatVecOutput {
    /// Rows one workgroup (or invocation) computes together.
    fn rows_per_group(self) -> usize {
        match self {
            MatVecOutput::One | MatVecOutput::Qkv | MatVecOutput::AddShares => 1,
            MatVecOutput::QkvRope(_) | MatVecOutput::SwiGlu => 2,
        }
    }
}

/// What a [`MatVec`] multiplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatVecInput {
    /// The vectors as given.
    Vectors,
    /// The vectors RMSNormed on the way in (`x / sqrt(mean(x²) + eps) · g`, the norm's
    /// weights `g` bound beside them, eps in [`MatVec::fuse_dims`]): the norm costs no
    /// dispatch of its own.
    RmsNormed,
    /// As [`MatVecInput::RmsNormed`], each vector first plus the heads' shares of the
    /// output product for its token ([`crate::AttentionOutput::Shares`]; their count in
    /// [`MatVec::dims_shares`]): the residual after the output product, never written.
    RmsNormedPlusShares,
}

impl MatVecInput {
    fn normed(self) -> bool {
        self != MatVecInput::Vectors
    }
}

/// Whether a kernel reads the heads' shares (binding 11).
fn reads_shares(input: MatVecInput, output: MatVecOutput) -> bool {
    input == MatVecInput::RmsNormedPlusShares || output == MatVecOutput::AddShares
}

/// The buffers a [`MatVec`] reads and writes; those its input and output do not use are
/// `None` ([`MatVec::bind_all`] says which one is missing).
#[derive(Debug, Clone, Copy)]
pub struct MatVecBindings<'a> {
    /// The matrix's blocks as the file stores them.
    pub weights: &'a wgpu::Buffer,
    /// Input vectors, `f32`, `n × cols`.
    pub x: &'a wgpu::Buffer,
    /// The output (q's rows for the stacked-qkv outputs).
    pub out: &'a wgpu::Buffer,
    /// [`MatVec::dims`] or [`MatVec::dims_qkv`].
    pub dims: &'a wgpu::Buffer,
    /// The [`crate::Step`] uniform.
    pub step: &'a wgpu::Buffer,
    /// The k and v caches (stacked-qkv outputs).
    pub caches: Option<(&'a wgpu::Buffer, &'a wgpu::Buffer)>,
    /// The norm's weights ([`MatVecInput::RmsNormed`]).
    pub norm: Option<&'a wgpu::Buffer>,
    /// [`MatVec::fuse_dims`] (a normed input or [`MatVecOutput::QkvRope`]).
    pub fuse: Option<&'a wgpu::Buffer>,
    /// The [`crate::rope_table`] ([`MatVecOutput::QkvRope`]).
    pub rope_table: Option<&'a wgpu::Buffer>,
    /// The stacked rows' biases, zeros where the model has none ([`MatVecOutput::QkvRope`]).
    pub bias: Option<&'a wgpu::Buffer>,
    /// The heads' shares of the output product ([`MatVecInput::RmsNormedPlusShares`],
    /// [`MatVecOutput::AddShares`]).
    pub shares: Option<&'a wgpu::Buffer>,
}

/// The matrix-vector kernel of one weight format.
#[derive(Debug)]
pub struct MatVec {
    pipeline: wgpu::ComputePipeline,
    /// Names the kernel in profiles: format, strategy, input, output.
    label: String,
    strategy: MatVecStrategy,
    input: MatVecInput,
    output: MatVecOutput,
}

fn check_cols(cols: usize) -> Result<(), GpuError> {
    if cols == 0 || !cols.is_multiple_of(32) {
        return Err(GpuError::Shape(format!(
            "matrix of {cols} columns: quantized rows need a multiple of 32"
        )));
    }
    Ok(())
}

fn grid(rows: u32) -> (u32, u32) {
    let x = rows.clamp(1, MAX_X);
    (x, rows.div_ceil(x))
}

impl MatVec {
    /// Compiles the kernel for `format` with the adapter's strategy.
    pub async fn new(gpu: &Gpu, format: WeightFormat) -> Result<Self, GpuError> {
        MatVec::with_strategy(gpu, format, MatVecStrategy::for_gpu(gpu)).await
    }

    /// Compiles the kernel for `format` with a given strategy.
    pub async fn with_strategy(
        gpu: &Gpu,
        format: WeightFormat,
        strategy: MatVecStrategy,
    ) -> Result<Self, GpuError> {
        MatVec::with_output(gpu, format, strategy, MatVecOutput::One).await
    }

    /// Compiles the kernel for `format` with a given strategy and output.
    pub async fn with_output(
        gpu: &Gpu,
        format: WeightFormat,
        strategy: MatVecStrategy,
        output: MatVecOutput,
    ) -> Result<Self, GpuError> {
        MatVec::fused(gpu, format, strategy, MatVecInput::Vectors, output).await
    }

    /// Compiles the kernel for `format` with a given strategy, input and output.
    pub async fn fused(
        gpu: &Gpu,
        format: WeightFormat,
        strategy: MatVecStrategy,
        input: MatVecInput,
        output: MatVecOutput,
    ) -> Result<Self, GpuError> {
        // The shares input is for a product whose Dims.extra counts shares and which reads
        // them once: not beside an output that reads them too or uses extra for q's rows.
        if input == MatVecInput::RmsNormedPlusShares
            && !matches!(output, MatVecOutput::One | MatVecOutput::SwiGlu)
        {
            return Err(GpuError::Shape(format!(
                "a {output:?} product cannot read its input plus the heads' shares"
            )));
        }
        let src = MatVec::wgsl_fused(format, strategy, input, output);
        let label = format!("matvec {format:?} {strategy:?} {input:?} {output:?}");
        Ok(MatVec {
            pipeline: gpu.pipeline(&label, &src).await?,
            label,
            strategy,
            input,
            output,
        })
    }

    /// The kernel's WGSL source (entry point `main`; bindings in [`MatVec::bind`]'s order,
    /// dims and step as uniforms): for runtimes that compile kernels themselves (burn's).
    pub fn wgsl(format: WeightFormat, strategy: MatVecStrategy, output: MatVecOutput) -> String {
        MatVec::wgsl_fused(format, strategy, MatVecInput::Vectors, output)
    }

    /// The WGSL source of a kernel with the given input and output (bindings numbered as
    /// [`MatVec::bind_all`] binds them).
    pub fn wgsl_fused(
        format: WeightFormat,
        strategy: MatVecStrategy,
        input: MatVecInput,
        output: MatVecOutput,
    ) -> String {
        let body = match strategy {
            MatVecStrategy::WorkgroupPerRow => concat!(
                include_str!("wgsl/matvec.wgsl"),
                include_str!("wgsl/matvec_reduce.wgsl")
            ),
            MatVecStrategy::SubgroupPerRow => concat!(
                include_str!("wgsl/matvec.wgsl"),
                include_str!("wgsl/matvec_reduce_subgroup.wgsl")
            ),
            MatVecStrategy::InvocationPerRow => include_str!("wgsl/matvec_rows.wgsl"),
        };
        let put = match output {
            MatVecOutput::One => include_str!("wgsl/matvec_out.wgsl"),
            MatVecOutput::Qkv => concat!(
                include_str!("wgsl/matvec_store_qkv.wgsl"),
                include_str!("wgsl/matvec_out_qkv.wgsl")
            ),
            MatVecOutput::QkvRope(_) => concat!(
                include_str!("wgsl/matvec_store_qkv.wgsl"),
                include_str!("wgsl/matvec_out_qkv_rope.wgsl")
            ),
            MatVecOutput::SwiGlu => include_str!("wgsl/matvec_out_swiglu.wgsl"),
            MatVecOutput::AddShares => include_str!("wgsl/matvec_out_shares.wgsl"),
        };
        let get = match input.normed() {
            false => include_str!("wgsl/matvec_in.wgsl"),
            true => include_str!("wgsl/matvec_in_norm.wgsl"),
        };
        let x8 = match input {
            MatVecInput::RmsNormedPlusShares => include_str!("wgsl/matvec_x_shares.wgsl"),
            MatVecInput::Vectors | MatVecInput::RmsNormed => include_str!("wgsl/matvec_x.wgsl"),
        };
        let fuse = match MatVec::uses_fuse(input, output) {
            true => include_str!("wgsl/matvec_fuse.wgsl"),
            false => "",
        };
        let common = include_str!("wgsl/matvec_common.wgsl");
        // The caches' element type (and the directive f16 needs, first of all).
        let cache = match output {
            MatVecOutput::Qkv => KvFormat::F32.wgsl(),
            MatVecOutput::QkvRope(kv) => kv.wgsl(),
            MatVecOutput::One | MatVecOutput::SwiGlu | MatVecOutput::AddShares => "",
        };
        [
            cache,
            step::WGSL,
            format.wgsl(),
            DIMS,
            common,
            x8,
            fuse,
            get,
            put,
            body,
        ]
        .join("\n")
    }

    fn uses_fuse(input: MatVecInput, output: MatVecOutput) -> bool {
        input.normed() || matches!(output, MatVecOutput::QkvRope(_))
    }

    /// The uniform of a fused kernel's norm and RoPE: the norm's `eps`, and for
    /// [`MatVecOutput::QkvRope`] the head width, the rotated dimensions of each head and
    /// the pairing (`halves`: `(i, i + n_rot/2)`, else adjacent pairs).
    pub fn fuse_dims(
        gpu: &Gpu,
        eps: f32,
        head_dim: usize,
        n_rot: usize,
        halves: bool,
    ) -> Result<wgpu::Buffer, GpuError> {
        if !head_dim.is_multiple_of(2) || !n_rot.is_multiple_of(2) || n_rot > head_dim {
            return Err(GpuError::Shape(format!(
                "RoPE of {n_rot} dimensions in heads of {head_dim}: both must be even, n_rot at most the head"
            )));
        }
        Ok(gpu.uniform(
            "matvec fuse",
            &[eps.to_bits(), head_dim as u32, n_rot as u32, halves as u32],
        ))
    }

    /// The uniform describing a `rows × cols` matrix used in `mode`.
    pub fn dims(
        gpu: &Gpu,
        rows: usize,
        cols: usize,
        mode: MatVecMode,
    ) -> Result<wgpu::Buffer, GpuError> {
        check_cols(cols)?;
        Ok(gpu.uniform("matvec dims", &[rows as u32, cols as u32, mode.bits(), 0]))
    }

    /// The uniform of a product that reads `shares` heads' shares of the output product
    /// ([`MatVecInput::RmsNormedPlusShares`], [`MatVecOutput::AddShares`]), in mode
    /// `Write` or `Accumulate`: the shares are indexed by the token's place in the run,
    /// which the `Head` and `Cache` modes do not keep.
    pub fn dims_shares(
        gpu: &Gpu,
        rows: usize,
        cols: usize,
        mode: MatVecMode,
        shares: usize,
    ) -> Result<wgpu::Buffer, GpuError> {
        check_cols(cols)?;
        if !matches!(mode, MatVecMode::Write | MatVecMode::Accumulate) {
            return Err(GpuError::Shape(format!(
                "the heads' shares are read in the Write and Accumulate modes, not {mode:?}"
            )));
        }
        Ok(gpu.uniform(
            "matvec shares dims",
            &[rows as u32, cols as u32, mode.bits(), shares as u32],
        ))
    }

    /// The uniform of a [`MatVecOutput::Qkv`] kernel: q's `q_rows` then k's and v's
    /// `kv_rows` each, of `cols` columns.
    pub fn dims_qkv(
        gpu: &Gpu,
        q_rows: usize,
        kv_rows: usize,
        cols: usize,
    ) -> Result<wgpu::Buffer, GpuError> {
        check_cols(cols)?;
        let rows = q_rows + 2 * kv_rows;
        Ok(gpu.uniform(
            "matvec qkv dims",
            &[rows as u32, cols as u32, 0, q_rows as u32],
        ))
    }

    /// Binds a [`MatVecOutput::Qkv`] kernel: the stacked weights, input vectors, q's
    /// output, the k and v caches, dims ([`MatVec::dims_qkv`]) and step.
    #[allow(clippy::too_many_arguments)]
    pub fn bind_qkv(
        &self,
        gpu: &Gpu,
        weights: &wgpu::Buffer,
        x: &wgpu::Buffer,
        (q, k, v): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[weights, x, q, dims, step, k, v])
    }

    /// Binds weights, input vectors (`f32`, `n × cols`), output, dims and step.
    pub fn bind(
        &self,
        gpu: &Gpu,
        weights: &wgpu::Buffer,
        x: &wgpu::Buffer,
        out: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[weights, x, out, dims, step])
    }

    /// Binds what this kernel's input and output read and write; `Err` names a buffer
    /// they need that `b` lacks.
    pub fn bind_all<'a>(
        &self,
        gpu: &Gpu,
        b: &MatVecBindings<'a>,
    ) -> Result<wgpu::BindGroup, GpuError> {
        let missing = |what: &str| {
            GpuError::Shape(format!(
                "a {:?} matvec with {:?} input needs {what}",
                self.output, self.input
            ))
        };
        let need = |o: Option<&'a wgpu::Buffer>, what: &str| o.ok_or_else(|| missing(what));
        let mut at: Vec<(u32, &wgpu::Buffer)> = vec![
            (0, b.weights),
            (1, b.x),
            (2, b.out),
            (3, b.dims),
            (4, b.step),
        ];
        if matches!(self.output, MatVecOutput::Qkv | MatVecOutput::QkvRope(_)) {
            let (k, v) = b.caches.ok_or_else(|| missing("the k and v caches"))?;
            at.extend([(5, k), (6, v)]);
        }
        if self.input.normed() {
            at.push((7, need(b.norm, "the norm's weights")?));
        }
        if MatVec::uses_fuse(self.input, self.output) {
            at.push((8, need(b.fuse, "the fuse uniform")?));
        }
        if matches!(self.output, MatVecOutput::QkvRope(_)) {
            at.push((9, need(b.rope_table, "the RoPE table")?));
            at.push((10, need(b.bias, "the biases")?));
        }
        if reads_shares(self.input, self.output) {
            at.push((11, need(b.shares, "the heads' shares")?));
        }
        Ok(gpu.bind_at(&self.pipeline, &at))
    }

    /// Records the product of `rows` rows (all of the matrix's) for `tokens` tokens (those
    /// the mode selects).
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        rows: usize,
        tokens: usize,
    ) {
        let groups = rows / self.output.rows_per_group();
        let [x, y, z] = MatVec::workgroups(self.strategy, groups, tokens);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(pass, &self.label, x, y, z);
    }

    /// The workgroup grid of a product of `groups` groups of rows (one row each, or the
    /// pairs a two-row output computes together) for `tokens` tokens.
    pub fn workgroups(strategy: MatVecStrategy, groups: usize, tokens: usize) -> [u32; 3] {
        let groups = match strategy {
            MatVecStrategy::WorkgroupPerRow | MatVecStrategy::SubgroupPerRow => groups as u32,
            MatVecStrategy::InvocationPerRow => (groups as u32).div_ceil(64),
        };
        let (x, y) = grid(groups);
        [x, y, (tokens as u32).div_ceil(TOKENS_PER_GROUP).max(1)]
    }
}

/// The embedding lookup: dequantized rows of a matrix, one per token.
#[derive(Debug)]
pub struct GetRows {
    pipeline: wgpu::ComputePipeline,
}

impl GetRows {
    /// Compiles the kernel for `format`.
    pub async fn new(gpu: &Gpu, format: WeightFormat) -> Result<Self, GpuError> {
        let src = format!(
            "{}\n{}\n{DIMS}\n{}",
            step::WGSL,
            format.wgsl(),
            include_str!("wgsl/get_rows.wgsl")
        );
        Ok(GetRows {
            pipeline: gpu.pipeline(&format!("get_rows {format:?}"), &src).await?,
        })
    }

    /// Binds the matrix, token ids (`u32`), output (`n × cols` f32), dims
    /// ([`MatVec::dims`]) and step.
    pub fn bind(
        &self,
        gpu: &Gpu,
        weights: &wgpu::Buffer,
        tokens: &wgpu::Buffer,
        out: &wgpu::Buffer,
        dims: &wgpu::Buffer,
        step: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        gpu.bind(&self.pipeline, &[weights, tokens, out, dims, step])
    }

    /// Records the lookup of `tokens` rows of `cols` weights.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        cols: usize,
        tokens: usize,
    ) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(
            pass,
            "get_rows",
            ((cols / 8) as u32).div_ceil(64),
            tokens as u32,
            1,
        );
    }
}

/// CPU reference: `out[t][r] = Σ_c W[r][c]·x[t][c]` accumulated in f64, and the sum of
/// `|W[r][c]·x[t][c]|` per output (the scale of the f32 rounding error).
pub fn matvec_reference(
    format: WeightFormat,
    bytes: &[u8],
    rows: usize,
    cols: usize,
    x: &[f32],
    n: usize,
) -> (Vec<f32>, Vec<f32>) {
    let mut out = vec![0f32; n * rows];
    let mut mag = vec![0f32; n * rows];
    for r in 0..rows {
        let w = format.dequantize_row(bytes, r, cols);
        for t in 0..n {
            let xt = &x[t * cols..(t + 1) * cols];
            let (mut s, mut a) = (0f64, 0f64);
            for (&wi, &xi) in w.iter().zip(xt) {
                let p = wi as f64 * xi as f64;
                s += p;
                a += p.abs();
            }
            out[t * rows + r] = s as f32;
            mag[t * rows + r] = a as f32;
        }
    }
    (out, mag)
}
