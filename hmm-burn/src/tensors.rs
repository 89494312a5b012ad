//! Small helpers the two programs share: a device with its float type, uploads, read-backs
//! and log-space arithmetic with a finite stand-in for log 0.

use burn_tensor::{DType, Device, Int, Tensor, TensorData, Transaction};
use sampler_core::SampleError;

use crate::Precision;

/// The stand-in for log 0 inside the programs: finite, so that `x − max` never meets
/// −∞ − (−∞); read-backs turn anything below [`NEG_READ`] into −∞.
pub(crate) const NEG: f64 = -1e30;
/// Read-back values below this are log 0.
pub(crate) const NEG_READ: f64 = -1e29;

/// A burn device with the float type the programs create their tensors in.
#[derive(Clone, Debug)]
pub(crate) struct Dev {
    pub device: Device,
    pub dtype: DType,
}

impl Dev {
    pub fn new(device: Device, precision: Precision) -> Self {
        let dtype = match precision {
            Precision::F64 => DType::F64,
            Precision::F32 => DType::F32,
        };
        Dev { device, dtype }
    }

    /// A float tensor of `shape` holding `values` (row-major).
    pub fn floats<const D: usize>(&self, values: &[f64], shape: [usize; D]) -> Tensor<D> {
        let data = match self.dtype {
            DType::F64 => TensorData::new(values.to_vec(), shape),
            _ => TensorData::new(values.iter().map(|&x| x as f32).collect::<Vec<_>>(), shape),
        };
        Tensor::from_data(data, (&self.device, self.dtype))
    }

    /// A float tensor of `shape` filled with `value`.
    pub fn full<const D: usize>(&self, shape: [usize; D], value: f64) -> Tensor<D> {
        Tensor::full(shape, value, (&self.device, self.dtype))
    }

    /// A 1-D index tensor.
    pub fn indices(&self, values: &[usize]) -> Tensor<1, Int> {
        let v: Vec<i32> = values.iter().map(|&i| i as i32).collect();
        Tensor::from_data(TensorData::new(v, [values.len()]), &self.device)
    }
}

/// Reads every tensor registered in `tx` back as f64s (row-major), in one transfer.
pub(crate) async fn read_all(tx: Transaction) -> Result<Vec<Vec<f64>>, SampleError> {
    let data = tx.execute_async().await.map_err(|e| {
        SampleError::Unsupported(format!("burn could not read a tensor back: {e:?}"))
    })?;
    data.into_iter()
        .map(|d| {
            d.convert::<f64>().try_into_vec::<f64>().map_err(|e| {
                SampleError::Unsupported(format!("burn returned unreadable data: {e:?}"))
            })
        })
        .collect()
}

/// log(x) with log 0 = [`NEG`] (x ≥ 0; a value below the float type's smallest normal,
/// which a GPU may flush to 0, counts as 0).
pub(crate) fn safe_log<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let tiny = match x.dtype() {
        DType::F64 => f64::MIN_POSITIVE,
        _ => f64::from(f32::MIN_POSITIVE),
    };
    let zero = x.clone().lower_elem(tiny);
    x.clamp_min(tiny).log().mask_fill(zero, NEG)
}

/// log Σ exp along `dim` (kept, of size 1), shifted by the maximum.
pub(crate) fn logsumexp<const D: usize>(x: Tensor<D>, dim: usize) -> Tensor<D> {
    let m = x.clone().max_dim(dim);
    (x - m.clone()).exp().sum_dim(dim).log() + m
}
