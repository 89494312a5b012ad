//! The compiled kernels a forward pass uses, one per weight format where it matters.

use shaders::{
    Attention, Bias, GetRows, Gpu, GpuError, HeadNorm, MatVec, MatVecOutput, MatVecStrategy,
    RmsNorm, Rope, SwiGlu, WeightFormat,
};
use std::collections::HashMap;

/// Pipelines compiled once per model.
#[derive(Debug)]
pub(crate) struct Kernels {
    pub(crate) matvec: HashMap<WeightFormat, MatVec>,
    /// Products of q, k and v stacked, by format.
    pub(crate) matvec_qkv: HashMap<WeightFormat, MatVec>,
    pub(crate) get_rows: GetRows,
    pub(crate) rms_norm: RmsNorm,
    pub(crate) rope: Rope,
    pub(crate) bias: Bias,
    pub(crate) head_norm: HeadNorm,
    pub(crate) attention: Attention,
    pub(crate) swiglu: SwiGlu,
}

impl Kernels {
    /// Compiles the kernels for matrices in `formats`, stacked q, k and v in `qkv_formats`
    /// and an embedding in `embd`.
    pub(crate) async fn new(
        gpu: &Gpu,
        formats: &[WeightFormat],
        qkv_formats: &[WeightFormat],
        embd: WeightFormat,
    ) -> Result<Self, GpuError> {
        let mut matvec = HashMap::new();
        for &f in formats {
            if let std::collections::hash_map::Entry::Vacant(e) = matvec.entry(f) {
                e.insert(MatVec::new(gpu, f).await?);
            }
        }
        let mut matvec_qkv = HashMap::new();
        for &f in qkv_formats {
            if let std::collections::hash_map::Entry::Vacant(e) = matvec_qkv.entry(f) {
                let strategy = MatVecStrategy::for_gpu(gpu);
                e.insert(MatVec::with_output(gpu, f, strategy, MatVecOutput::Qkv).await?);
            }
        }
        Ok(Kernels {
            matvec,
            matvec_qkv,
            get_rows: GetRows::new(gpu, embd).await?,
            rms_norm: RmsNorm::new(gpu).await?,
            rope: Rope::new(gpu).await?,
            bias: Bias::new(gpu).await?,
            head_norm: HeadNorm::new(gpu).await?,
            attention: Attention::new(gpu).await?,
            swiglu: SwiGlu::new(gpu).await?,
        })
    }

    /// The product kernel of `format` (compiled in [`Kernels::new`]).
    pub(crate) fn matvec(&self, format: WeightFormat) -> &MatVec {
        &self.matvec[&format]
    }
}
