//! The model's tensors uploaded to the GPU: Q4_1 and Q8_0 matrices as their raw quantized
//! blocks, every other type converted to f32, norm weights as f32.

use crate::gguf::{GgmlType, Gguf, TensorInfo};
use shaders::{Gpu, GpuError, WeightFormat, f32_bytes, wgpu};

/// A `rows × cols` weight matrix in a GPU buffer.
#[derive(Debug)]
pub(crate) struct GpuMatrix {
    pub(crate) buffer: wgpu::Buffer,
    pub(crate) format: WeightFormat,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
}

fn find<'a>(g: &'a Gguf, name: &str) -> Result<&'a TensorInfo, GpuError> {
    g.tensor(name)
        .ok_or_else(|| GpuError::Shape(format!("tensor {name:?} is missing")))
}

/// Matrix `name`, checked to be `rows × cols`.
fn shaped<'a>(
    g: &'a Gguf,
    name: &str,
    rows: usize,
    cols: usize,
) -> Result<&'a TensorInfo, GpuError> {
    let t = find(g, name)?;
    if t.dims != [cols as u64, rows as u64] {
        return Err(GpuError::Shape(format!(
            "tensor {name:?} has shape {:?}, expected [{cols}, {rows}]",
            t.dims
        )));
    }
    Ok(t)
}

/// Uploads matrices `parts` (name, rows; each `rows × cols`) as one matrix, their rows one
/// after the other, when the file holds them all in one format the GPU reads as stored
/// and the whole fits one buffer; `None` otherwise. One product over the stack computes
/// every matrix's rows in one dispatch.
pub(crate) fn stacked(
    gpu: &Gpu,
    g: &Gguf,
    bytes: &[u8],
    parts: &[(String, usize)],
    cols: usize,
) -> Result<Option<GpuMatrix>, GpuError> {
    let mut format = None;
    let mut data = Vec::new();
    for (name, rows) in parts {
        let t = shaped(g, name, *rows, cols)?;
        let Some(f) = file_format(t.ty) else {
            return Ok(None);
        };
        if *format.get_or_insert(f) != f {
            return Ok(None);
        }
        data.extend_from_slice(&bytes[t.range()]);
    }
    let l = gpu.limits();
    let Some(format) = format
        .filter(|_| data.len() as u64 <= l.max_buffer_size.min(l.max_storage_buffer_binding_size))
    else {
        return Ok(None);
    };
    let names: Vec<&str> = parts.iter().map(|(n, _)| n.as_str()).collect();
    Ok(Some(GpuMatrix {
        buffer: gpu.storage(&names.join(" + "), &data)?,
        format,
        rows: parts.iter().map(|(_, r)| r).sum(),
        cols,
    }))
}

/// Uploads matrix `name` (`rows × cols`), checking its shape.
pub(crate) fn matrix(
    gpu: &Gpu,
    g: &Gguf,
    bytes: &[u8],
    name: &str,
    rows: usize,
    cols: usize,
) -> Result<GpuMatrix, GpuError> {
    let t = shaped(g, name, rows, cols)?;
    let (format, buffer) = match (file_format(t.ty), t.ty) {
        // The file's bytes, decoded by the format's WGSL `load8`.
        (Some(format), _) => (format, gpu.storage(name, &bytes[t.range()])?),
        // Exactly the same weights as Q4_1 blocks (see `quant::q4_0_as_q4_1`).
        (None, GgmlType::Q4_0) if let Some(q) = quant::q4_0_as_q4_1(&bytes[t.range()]) => {
            (WeightFormat::Q4_1, gpu.storage(name, &q)?)
        }
        _ => (
            WeightFormat::F32,
            gpu.storage(name, &f32_bytes(&t.to_f32(bytes)))?,
        ),
    };
    Ok(GpuMatrix {
        buffer,
        format,
        rows,
        cols,
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

/// Uploads vector `name` of `len` floats, checking its shape.
pub(crate) fn vector(
    gpu: &Gpu,
    g: &Gguf,
    bytes: &[u8],
    name: &str,
    len: usize,
) -> Result<wgpu::Buffer, GpuError> {
    let t = find(g, name)?;
    if t.dims != [len as u64] {
        return Err(GpuError::Shape(format!(
            "tensor {name:?} has shape {:?}, expected [{len}]",
            t.dims
        )));
    }
    gpu.storage(name, &f32_bytes(&t.to_f32(bytes)))
}
