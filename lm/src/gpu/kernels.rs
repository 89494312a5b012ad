//! The compiled kernels a forward pass uses: the products by weight format, input and
//! output, and the element-wise kernels of the paths the products do not fold in.

use shaders::{
    Attention, AttentionOutput, Bias, GetRows, Gpu, GpuError, HeadNorm, KvFormat, MatVec,
    MatVecInput, MatVecOutput, MatVecStrategy, Rope, SwiGlu, WeightFormat,
};
use std::collections::HashMap;

/// What a product kernel is compiled for: the weights' format, what it multiplies and
/// where its rows go.
pub(crate) type ProductKind = (WeightFormat, MatVecInput, MatVecOutput);

/// Pipelines compiled once per model.
#[derive(Debug)]
pub(crate) struct Kernels {
    products: HashMap<ProductKind, MatVec>,
    pub(crate) get_rows: GetRows,
    pub(crate) rope: Rope,
    pub(crate) bias: Bias,
    pub(crate) head_norm: HeadNorm,
    attentions: HashMap<AttentionOutput, Attention>,
    pub(crate) swiglu: SwiGlu,
}

impl Kernels {
    /// Compiles a product kernel for each kind in `products` (with the adapter's strategy),
    /// the embedding lookup of `embd` and the attention over caches in format `kv` for
    /// each of `attentions`.
    pub(crate) async fn new(
        gpu: &Gpu,
        products: &[ProductKind],
        embd: WeightFormat,
        (kv, attentions): (KvFormat, &[AttentionOutput]),
    ) -> Result<Self, GpuError> {
        let strategy = MatVecStrategy::for_gpu(gpu);
        let mut compiled = HashMap::new();
        for &(f, input, output) in products {
            if let std::collections::hash_map::Entry::Vacant(e) = compiled.entry((f, input, output))
            {
                e.insert(MatVec::fused(gpu, f, strategy, input, output).await?);
            }
        }
        let mut compiled_attentions = HashMap::new();
        for &output in attentions {
            if let std::collections::hash_map::Entry::Vacant(e) = compiled_attentions.entry(output)
            {
                e.insert(Attention::with_output(gpu, kv, output).await?);
            }
        }
        Ok(Kernels {
            products: compiled,
            get_rows: GetRows::new(gpu, embd).await?,
            rope: Rope::new(gpu).await?,
            bias: Bias::new(gpu).await?,
            head_norm: HeadNorm::new(gpu).await?,
            attentions: compiled_attentions,
            swiglu: SwiGlu::new(gpu).await?,
        })
    }

    /// The product kernel of `kind` (compiled in [`Kernels::new`]).
    pub(crate) fn product(&self, kind: ProductKind) -> &MatVec {
        &self.products[&kind]
    }

    /// The attention kernel putting its results as `output` says (compiled in
    /// [`Kernels::new`]).
    pub(crate) fn attention(&self, output: AttentionOutput) -> &Attention {
        &self.attentions[&output]
    }
}
