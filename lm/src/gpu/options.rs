//! [`GpuOptions`]: what a [`super::GpuModel`] is asked to use beyond f32 caches and five
//! dispatches a block.

use shaders::KvFormat;

/// The choices a GPU model is built with. Each is granted only where the device and the
/// model allow it; the model says what it got ([`super::GpuModel::kv_format`],
/// [`super::GpuModel::folds_output`]). The default is what every adapter and model can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuOptions {
    /// How the KV caches store keys and values: f16 halves their memory and reads and
    /// needs `shader-f16` and every block's q/k/v product fused.
    pub cache: KvFormat,
    /// Fold each block's output product into attention: each head writes its share of the
    /// product, which the gate/up product adds to its input and down adds to the residual,
    /// so a block is four dispatches, not five. Needs stacked gate/up matrices, no output
    /// bias, and heads of whole 32-column blocks up to 256 wide. The extra reads of the
    /// shares may cost more than the dispatch saved (docs/bench/gpu-forward.md).
    pub fold_output: bool,
}
