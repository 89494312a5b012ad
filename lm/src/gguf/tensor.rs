//! Tensor infos: name, shape, ggml type and where the data lies.

use quant::{BlockQ4_1, BlockQ8_0, QK4_1, QK8_0};

/// The ggml tensor types this reader handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlType {
    /// 32-bit float (ggml type 0).
    F32,
    /// IEEE half float (ggml type 1).
    F16,
    /// Blocks of 32 weights: f16 scale, 32 × i8 (ggml type 8).
    Q8_0,
    /// Blocks of 32 weights: f16 scale, f16 minimum, 32 × 4-bit (ggml type 3).
    Q4_1,
}

impl GgmlType {
    /// The type for a ggml type id, or `Err` with ggml's name for known but unsupported ids.
    pub fn from_id(id: u32) -> Result<Self, Option<&'static str>> {
        match id {
            0 => Ok(GgmlType::F32),
            1 => Ok(GgmlType::F16),
            3 => Ok(GgmlType::Q4_1),
            8 => Ok(GgmlType::Q8_0),
            other => Err(ggml_type_name(other)),
        }
    }

    /// The ggml type id.
    pub fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_1 => 3,
            GgmlType::Q8_0 => 8,
        }
    }

    /// ggml's name for the type.
    pub fn name(self) -> &'static str {
        ggml_type_name(self.id()).unwrap_or("?")
    }

    /// Weights per block (1 for float types).
    pub fn block_len(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 => 1,
            GgmlType::Q4_1 => QK4_1,
            GgmlType::Q8_0 => QK8_0,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 => 2,
            GgmlType::Q4_1 => size_of::<BlockQ4_1>(),
            GgmlType::Q8_0 => size_of::<BlockQ8_0>(),
        }
    }
}

/// ggml's names for its type ids (ggml.h `enum ggml_type`), for error messages.
fn ggml_type_name(id: u32) -> Option<&'static str> {
    Some(match id {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        6 => "Q5_0",
        7 => "Q5_1",
        8 => "Q8_0",
        9 => "Q8_1",
        10 => "Q2_K",
        11 => "Q3_K",
        12 => "Q4_K",
        13 => "Q5_K",
        14 => "Q6_K",
        15 => "Q8_K",
        16 => "IQ2_XXS",
        17 => "IQ2_XS",
        18 => "IQ3_XXS",
        19 => "IQ1_S",
        20 => "IQ4_NL",
        21 => "IQ3_S",
        22 => "IQ2_S",
        23 => "IQ4_XS",
        24 => "I8",
        25 => "I16",
        26 => "I32",
        27 => "I64",
        28 => "F64",
        29 => "IQ1_M",
        30 => "BF16",
        34 => "TQ1_0",
        35 => "TQ2_0",
        39 => "MXFP4",
        _ => return None,
    })
}

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
}
