//! [`MatVec`]: quantized matrix times a small batch of vectors, and [`GetRows`]: rows of a
//! quantized matrix (the token embedding). CPU references: [`matvec_reference`].

use crate::error::GpuError;
use crate::format::WeightFormat;
use crate::gpu::Gpu;
use crate::step;

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
    /// `out[step.n_past + t] = W x[t]` (keys and values into the cache).
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
    /// A workgroup of 64 per row, reduced in workgroup memory (GPUs).
    WorkgroupPerRow,
    /// One invocation per row, no barriers (CPU adapters: lavapipe, SwiftShader).
    InvocationPerRow,
}

impl MatVecStrategy {
    /// The faster strategy for this adapter.
    pub fn for_gpu(gpu: &Gpu) -> Self {
        if gpu.is_cpu() {
            MatVecStrategy::InvocationPerRow
        } else {
            MatVecStrategy::WorkgroupPerRow
        }
    }
}

/// Where a [`MatVec`]'s rows go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatVecOutput {
    /// One output, as the [`MatVecMode`] says.
    One,
    /// The matrix is q, k and v stacked: q's rows to one output, k's and v's to two caches
    /// at the step's cache offset ([`MatVec::dims_qkv`], [`MatVec::bind_qkv`]).
    Qkv,
}

/// The matrix-vector kernel of one weight format.
#[derive(Debug)]
pub struct MatVec {
    pipeline: wgpu::ComputePipeline,
    strategy: MatVecStrategy,
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
        let src = MatVec::wgsl(format, strategy, output);
        let label = format!("matvec {format:?} {strategy:?} {output:?}");
        Ok(MatVec {
            pipeline: gpu.pipeline(&label, &src).await?,
            strategy,
        })
    }

    /// The kernel's WGSL source (entry point `main`; bindings in [`MatVec::bind`]'s order,
    /// dims and step as uniforms): for runtimes that compile kernels themselves (burn's).
    pub fn wgsl(format: WeightFormat, strategy: MatVecStrategy, output: MatVecOutput) -> String {
        let body = match strategy {
            MatVecStrategy::WorkgroupPerRow => include_str!("wgsl/matvec.wgsl"),
            MatVecStrategy::InvocationPerRow => include_str!("wgsl/matvec_rows.wgsl"),
        };
        let put = match output {
            MatVecOutput::One => include_str!("wgsl/matvec_out.wgsl"),
            MatVecOutput::Qkv => include_str!("wgsl/matvec_out_qkv.wgsl"),
        };
        format!("{}\n{}\n{}\n{}", step::WGSL, format.wgsl(), put, body)
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

    /// Records the product of `rows` rows for `tokens` tokens (those the mode selects).
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        bind: &wgpu::BindGroup,
        rows: usize,
        tokens: usize,
    ) {
        let [x, y, z] = MatVec::workgroups(self.strategy, rows, tokens);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, bind, &[]);
        crate::dispatches::record(pass, x, y, z);
    }

    /// The workgroup grid of a product of `rows` rows for `tokens` tokens.
    pub fn workgroups(strategy: MatVecStrategy, rows: usize, tokens: usize) -> [u32; 3] {
        let groups = match strategy {
            MatVecStrategy::WorkgroupPerRow => rows as u32,
            MatVecStrategy::InvocationPerRow => (rows as u32).div_ceil(64),
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
            "{}\n{}\n{}",
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
        crate::dispatches::record(pass, ((cols / 8) as u32).div_ceil(64), tokens as u32, 1);
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
