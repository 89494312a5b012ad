//! Tensor infos: name, shape, ggml type and where the data lies.

pub use quant::GgmlType;

/// One tensor's description, with its data range checked against the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Tensor name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// Shape in ggml order: `dims[0]` varies fastest (the length of a row).
    pub dims: Vec<u64>,
    /// Element type.
    pub ty: GgmlType,
    /// Absolute byte offset of the data in the file.
    pub offset: usize,
    /// Byte length of the data.
    pub size: usize,
}

impl TensorInfo {
    /// Number of elements.
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }

    /// Length of one row (`dims[0]`).
    pub fn row_len(&self) -> usize {
        self.dims[0] as usize
    }

    /// Number of rows (product of `dims[1..]`).
    pub fn n_rows(&self) -> usize {
        self.dims[1..].iter().product::<u64>() as usize
    }

    /// Byte range of the data in the file.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.size
    }

    /// The tensor's values as f32, decoded from `file` (whatever its type).
    pub fn to_f32(&self, file: &[u8]) -> Vec<f32> {
        let mut out = vec![0f32; self.n_elements() as usize];
        self.ty.dequantize(&file[self.range()], &mut out);
        out
    }
}
