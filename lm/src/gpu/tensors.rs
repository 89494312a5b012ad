//! The model's tensors uploaded to the GPU from the CPU model's
//! [`crate::forward::weights::Weights`] (where the file's tensors are found and checked, once
//! for every engine): matrices in a format the WGSL kernels read as stored (Q4_0 as its
//! exact Q4_1 rewrite), any other type converted to f32; norm weights and biases as f32.

use crate::forward::matmul::WeightData;
use crate::forward::weights::Matrix;
use crate::gguf::GgmlType;
use shaders::{Gpu, GpuError, WeightFormat, f32_bytes, wgpu};

/// A `rows × cols` weight matrix in a GPU buffer.
#[derive(Debug)]
pub(crate) struct GpuMatrix {
    pub(crate) buffer: wgpu::Buffer,
    pub(crate) format: WeightFormat,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
}

/// The bytes the GPU reads for `m` as stored, in their format; `None` for a type no WGSL
/// kernel reads (F32 matrices, which the CPU model holds decoded).
fn as_stored<'a>(m: &'a Matrix, bytes: &'a [u8]) -> Option<(WeightFormat, &'a [u8])> {
    match m.data(bytes) {
        WeightData::F32(_) => None,
        WeightData::Q4_1(b) => Some((WeightFormat::Q4_1, b)),
        WeightData::Q8_0(b) => Some((WeightFormat::Q8_0, b)),
        WeightData::Decoded(ty, b) => file_format(ty).map(|f| (f, b)),
    }
}

/// Uploads `parts` (each `rows × cols` with the same `cols`) as one matrix, their rows one
/// after the other, when they share one format the GPU reads as stored and the whole fits
/// one buffer; `None` otherwise. One product over the stack computes every matrix's rows
/// in one dispatch.
pub(crate) fn stacked(
    gpu: &Gpu,
    parts: &[&Matrix],
    bytes: &[u8],
    label: &str,
) -> Result<Option<GpuMatrix>, GpuError> {
    let mut format = None;
    let mut data = Vec::new();
    for m in parts {
        let Some((f, b)) = as_stored(m, bytes) else {
            return Ok(None);
        };
        if *format.get_or_insert(f) != f {
            return Ok(None);
        }
        data.extend_from_slice(b);
    }
    let l = gpu.limits();
    let Some(format) = format
        .filter(|_| data.len() as u64 <= l.max_buffer_size.min(l.max_storage_buffer_binding_size))
    else {
        return Ok(None);
    };
    Ok(Some(GpuMatrix {
        buffer: gpu.storage(label, &data)?,
        format,
        rows: parts.iter().map(|m| m.rows()).sum(),
        cols: parts.first().map_or(0, |m| m.cols()),
    }))
}

/// Uploads matrix `m`: as stored where a kernel reads its format, else as f32.
pub(crate) fn matrix(
    gpu: &Gpu,
    m: &Matrix,
    bytes: &[u8],
    label: &str,
) -> Result<GpuMatrix, GpuError> {
    let (format, buffer) = match as_stored(m, bytes) {
        Some((format, b)) => (format, gpu.storage(label, b)?),
        None => (
            WeightFormat::F32,
            gpu.storage(label, &f32_bytes(&m.to_f32(bytes)))?,
        ),
    };
    Ok(GpuMatrix {
        buffer,
        format,
        rows: m.rows(),
        cols: m.cols(),
    })
}

/// The GPU format that reads a tensor of type `ty` as the file stores it, if any.
pub(crate) fn file_format(ty: GgmlType) -> Option<WeightFormat> {
    Some(match ty {
        GgmlType::Q4_1 => WeightFormat::Q4_1,
        GgmlType::Q8_0 => WeightFormat::Q8_0,
        GgmlType::Q5_0 => WeightFormat::Q5_0,
        GgmlType::Q5_1 => WeightFormat::Q5_1,
        GgmlType::F16 => WeightFormat::F16,
        GgmlType::Bf16 => WeightFormat::Bf16,
        GgmlType::Q2K => WeightFormat::Q2K,
        GgmlType::Q3K => WeightFormat::Q3K,
        GgmlType::Q4K => WeightFormat::Q4K,
        GgmlType::Q5K => WeightFormat::Q5K,
        GgmlType::Q6K => WeightFormat::Q6K,
        GgmlType::F32 | GgmlType::Q4_0 => return None,
    })
}

/// Uploads a vector of floats (a norm's weights, a bias).
pub(crate) fn vector(gpu: &Gpu, v: &[f32], label: &str) -> Result<wgpu::Buffer, GpuError> {
    gpu.storage(label, &f32_bytes(v))
}
