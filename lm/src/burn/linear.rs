//! A weight matrix as the burn program multiplies by it: f32 on the device, or (wgpu)
//! the file's quantized blocks for our custom kernel.

use crate::forward::Matrix;
use burn_tensor::{DType, Device, Tensor, TensorData};

/// `y = x · Wᵀ` for a `rows × cols` matrix `W` of the file.
#[derive(Debug)]
pub(super) enum Linear {
    /// `Wᵀ` as a contiguous `cols × rows` f32 tensor (so the product is `x.matmul(w)`).
    Dense(Box<Tensor<2>>),
    /// The file's quantized blocks in a wgpu buffer, multiplied by our WGSL kernel.
    #[cfg(all(feature = "burn-wgpu", not(feature = "burn-fusion")))]
    Quantized(Box<super::custom::QuantMatrix>),
}

impl Linear {
    /// Uploads matrix `m` (`rows × cols`) of the model to `device`: as the file's blocks
    /// when `quantized` (the wgpu backend), the matrix is not F32 and its rows are whole
    /// units of 32; else decoded to f32.
    pub(super) fn upload(m: &Matrix, bytes: &[u8], device: &Device, quantized: bool) -> Self {
        #[cfg(all(feature = "burn-wgpu", not(feature = "burn-fusion")))]
        // The WGSL products read rows in units of 32 weights (F16 or BF16 rows of another
        // width are multiplied as f32).
        if quantized
            && m.cols().is_multiple_of(32)
            && let Some((ty, blocks)) = m.blocks(bytes)
            && let Some(format) = crate::gpu::tensors::file_format(ty)
        {
            return Linear::Quantized(Box::new(super::custom::QuantMatrix::upload(
                device,
                format,
                ty,
                blocks,
                m.cols(),
            )));
        }
        let _ = quantized;
        let cols = m.cols();
        let w = m.to_f32(bytes);
        let rows = w.len() / cols;
        Linear::Dense(Box::new(floats(
            transpose(&w, rows, cols),
            [cols, rows],
            device,
        )))
    }

    /// `x · Wᵀ` for `x` of shape `[n, cols]`: shape `[n, rows]`.
    pub(super) fn apply(&self, x: Tensor<2>) -> Tensor<2> {
        match self {
            Linear::Dense(w) => x.matmul((**w).clone()),
            #[cfg(all(feature = "burn-wgpu", not(feature = "burn-fusion")))]
            Linear::Quantized(m) => m.apply(x),
        }
    }
}

/// Row-major `rows × cols` to row-major `cols × rows`.
fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0f32; w.len()];
    for (r, row) in w.chunks_exact(cols).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            t[c * rows + r] = v;
        }
    }
    t
}

/// An f32 tensor of `shape` holding `values` (row-major).
pub(super) fn floats<const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
    device: &Device,
) -> Tensor<D> {
    Tensor::from_data(TensorData::new(values, shape), (device, DType::F32))
}

/// A vector of the model as a 1-D f32 tensor.
pub(super) fn vector(v: &[f32], device: &Device) -> Tensor<1> {
    floats(v.to_vec(), [v.len()], device)
}
