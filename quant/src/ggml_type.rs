//! The ggml tensor types: ids, names, block sizes and the scalar decoder of each.

use crate::{BlockQ4_1, BlockQ8_0, QK4_1, QK8_0};

/// The ggml tensor types this reader handles. Q4_1 and Q8_0 matrices run quantized on
/// the CPU and the GPU; the CPU decodes every other type a row at a time as a product
/// reaches it; the GPU decodes every type in its kernels, from the file's bytes (Q4_0 as
/// Q4_1) ([`GgmlType::runs_quantized`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlType {
    /// 32-bit float (ggml type 0).
    F32,
    /// IEEE half float (ggml type 1).
    F16,
    /// bfloat16 (ggml type 30).
    Bf16,
    /// Blocks of 32 weights: f16 scale, 32 × 4-bit, `w = d·(q − 8)` (ggml type 2).
    Q4_0,
    /// Blocks of 32 weights: f16 scale, f16 minimum, 32 × 4-bit (ggml type 3).
    Q4_1,
    /// Blocks of 32 weights: f16 scale, 32 × 5-bit, `w = d·(q − 16)` (ggml type 6).
    Q5_0,
    /// Blocks of 32 weights: f16 scale and minimum, 32 × 5-bit (ggml type 7).
    Q5_1,
    /// Blocks of 32 weights: f16 scale, 32 × i8 (ggml type 8).
    Q8_0,
    /// K-quant, 256 weights, 2-bit codes with 4-bit scales and mins (ggml type 10).
    Q2K,
    /// K-quant, 256 weights, 3-bit codes with 6-bit scales (ggml type 11).
    Q3K,
    /// K-quant, 256 weights, 4-bit codes with 6-bit scales and mins (ggml type 12).
    Q4K,
    /// K-quant, 256 weights, 5-bit codes with 6-bit scales and mins (ggml type 13).
    Q5K,
    /// K-quant, 256 weights, 6-bit codes with 8-bit scales (ggml type 14).
    Q6K,
}

impl GgmlType {
    /// Every type this reader handles.
    pub const ALL: [GgmlType; 13] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Bf16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q2K,
        GgmlType::Q3K,
        GgmlType::Q4K,
        GgmlType::Q5K,
        GgmlType::Q6K,
    ];

    /// The type for a ggml type id, or `Err` with ggml's name for known but unsupported ids.
    pub fn from_id(id: u32) -> Result<Self, Option<&'static str>> {
        GgmlType::ALL
            .into_iter()
            .find(|t| t.id() == id)
            .ok_or_else(|| ggml_type_name(id))
    }

    /// The ggml type id.
    pub fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Q5_0 => 6,
            GgmlType::Q5_1 => 7,
            GgmlType::Q8_0 => 8,
            GgmlType::Q2K => 10,
            GgmlType::Q3K => 11,
            GgmlType::Q4K => 12,
            GgmlType::Q5K => 13,
            GgmlType::Q6K => 14,
            GgmlType::Bf16 => 30,
        }
    }

    /// ggml's name for the type.
    pub fn name(self) -> &'static str {
        ggml_type_name(self.id()).unwrap_or("?")
    }

    /// Weights per block (1 for float types).
    pub fn block_len(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::Bf16 => 1,
            GgmlType::Q4_1 => QK4_1,
            GgmlType::Q8_0 => QK8_0,
            GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q5_1 => 32,
            GgmlType::Q2K | GgmlType::Q3K | GgmlType::Q4K | GgmlType::Q5K | GgmlType::Q6K => {
                crate::QK_K
            }
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 | GgmlType::Bf16 => 2,
            GgmlType::Q4_1 => size_of::<BlockQ4_1>(),
            GgmlType::Q8_0 => size_of::<BlockQ8_0>(),
            GgmlType::Q4_0 => crate::Q4_0_BYTES,
            GgmlType::Q5_0 => crate::Q5_0_BYTES,
            GgmlType::Q5_1 => crate::Q5_1_BYTES,
            GgmlType::Q2K => crate::Q2_K_BYTES,
            GgmlType::Q3K => crate::Q3_K_BYTES,
            GgmlType::Q4K => crate::Q4_K_BYTES,
            GgmlType::Q5K => crate::Q5_K_BYTES,
            GgmlType::Q6K => crate::Q6_K_BYTES,
        }
    }

    /// Byte offsets of the f16 fields (scales, minimums) within one block: where a random
    /// block must hold finite values (tests and benchmarks). BF16 and F32 have none.
    pub fn half_fields(self) -> &'static [usize] {
        match self {
            GgmlType::F32 | GgmlType::Bf16 => &[],
            GgmlType::F16 | GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => &[0],
            GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q4K | GgmlType::Q5K => &[0, 2],
            GgmlType::Q2K => &[80, 82],
            GgmlType::Q3K => &[108],
            GgmlType::Q6K => &[208],
        }
    }

    /// Whether matrices of this type run on their quantized blocks (Q4_1, Q8_0: the CPU
    /// kernels and the WGSL decoders); the CPU decodes the others row by row to f32.
    pub fn runs_quantized(self) -> bool {
        matches!(self, GgmlType::Q4_1 | GgmlType::Q8_0)
    }

    /// Dequantizes `data` (whole blocks of this type) into `out`, `block_len` floats per
    /// block (`quant`'s scalar dequantizers, checked against the `gguf` package's).
    pub fn dequantize(self, data: &[u8], out: &mut [f32]) {
        let f: fn(&[u8], &mut [f32]) = match self {
            GgmlType::F32 => crate::dequantize_f32,
            GgmlType::F16 => crate::dequantize_f16,
            GgmlType::Bf16 => crate::dequantize_bf16,
            GgmlType::Q4_0 => crate::dequantize_q4_0,
            GgmlType::Q4_1 => crate::dequantize_q4_1,
            GgmlType::Q5_0 => crate::dequantize_q5_0,
            GgmlType::Q5_1 => crate::dequantize_q5_1,
            GgmlType::Q8_0 => crate::dequantize_q8_0,
            GgmlType::Q2K => crate::dequantize_q2_k,
            GgmlType::Q3K => crate::dequantize_q3_k,
            GgmlType::Q4K => crate::dequantize_q4_k,
            GgmlType::Q5K => crate::dequantize_q5_k,
            GgmlType::Q6K => crate::dequantize_q6_k,
        };
        f(data, out)
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
