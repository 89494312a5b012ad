//! [`WeightFormat`]: how a weight matrix lies in its GPU buffer, with the WGSL decoder
//! (`load8`: eight weights of a 32-weight sub-block) and the CPU decoder of the same
//! layout (`quant`'s scalar dequantizers).

/// The encoding of a weight matrix on the GPU. Rows are `cols / block_len` consecutive
/// blocks, exactly as the GGUF file stores them (no repacking).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    /// GGUF Q4_1 blocks: 20 bytes (f16 d, f16 m, 16 nibble bytes) per 32.
    Q4_1,
    /// GGUF Q8_0 blocks: 34 bytes (f16 d, 32 i8) per 32.
    Q8_0,
    /// GGUF Q5_0 blocks: 22 bytes (f16 d, 32 fifth bits, 16 nibble bytes) per 32.
    Q5_0,
    /// GGUF Q5_1 blocks: 24 bytes (f16 d, f16 m, 32 fifth bits, 16 nibble bytes) per 32.
    Q5_1,
    /// Little-endian IEEE halves.
    F16,
    /// Little-endian bfloat16s.
    Bf16,
    /// GGUF Q2_K superblocks: 84 bytes per 256 (sixteen 4-bit scale and min pairs, 2-bit
    /// codes, f16 d and dmin).
    Q2K,
    /// GGUF Q3_K superblocks: 110 bytes per 256 (high-bit mask, 2-bit codes, sixteen
    /// packed 6-bit scales, f16 d).
    Q3K,
    /// GGUF Q4_K superblocks: 144 bytes per 256 (f16 d and dmin, 6-bit scales and mins
    /// of eight sub-blocks, nibbles).
    Q4K,
    /// GGUF Q5_K superblocks: 176 bytes per 256 (Q4_K's layout plus 32 bytes of fifth
    /// bits).
    Q5K,
    /// GGUF Q6_K superblocks: 210 bytes per 256 (low nibbles, 2-bit highs, sixteen i8
    /// scales, f16 d).
    Q6K,
    /// Little-endian f32.
    F32,
}

impl WeightFormat {
    /// Every format, for tests.
    pub const ALL: [WeightFormat; 12] = [
        WeightFormat::Q2K,
        WeightFormat::Q3K,
        WeightFormat::Q4_1,
        WeightFormat::Q8_0,
        WeightFormat::Q5_0,
        WeightFormat::Q5_1,
        WeightFormat::F16,
        WeightFormat::Bf16,
        WeightFormat::Q4K,
        WeightFormat::Q5K,
        WeightFormat::Q6K,
        WeightFormat::F32,
    ];

    /// Weights per block (a row's width must be a multiple of it).
    pub fn block_len(self) -> usize {
        match self {
            WeightFormat::Q2K
            | WeightFormat::Q3K
            | WeightFormat::Q4K
            | WeightFormat::Q5K
            | WeightFormat::Q6K => 256,
            _ => 32,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            WeightFormat::Q4_1 => 20,
            WeightFormat::Q8_0 => 34,
            WeightFormat::Q5_0 => 22,
            WeightFormat::Q5_1 => 24,
            WeightFormat::F16 | WeightFormat::Bf16 => 64,
            WeightFormat::Q2K => 84,
            WeightFormat::Q3K => 110,
            WeightFormat::Q4K => 144,
            WeightFormat::Q5K => 176,
            WeightFormat::Q6K => 210,
            WeightFormat::F32 => 128,
        }
    }

    /// Bytes of a `rows × cols` matrix.
    pub fn matrix_bytes(self, rows: usize, cols: usize) -> usize {
        rows * (cols / self.block_len()) * self.block_bytes()
    }

    /// The WGSL `load8` decoder of this format (after the helpers it shares with others:
    /// byte addressing in `bytes.wgsl`, K-quant scales in `k_scales.wgsl`).
    pub(crate) fn wgsl(self) -> &'static str {
        match self {
            WeightFormat::Q4_1 => include_str!("wgsl/q4_1.wgsl"),
            WeightFormat::Q8_0 => concat!(
                include_str!("wgsl/bytes.wgsl"),
                include_str!("wgsl/q8_0.wgsl")
            ),
            WeightFormat::Q5_0 => concat!(
                include_str!("wgsl/bytes.wgsl"),
                include_str!("wgsl/q5_0.wgsl")
            ),
            WeightFormat::Q5_1 => include_str!("wgsl/q5_1.wgsl"),
            WeightFormat::F16 => include_str!("wgsl/f16.wgsl"),
            WeightFormat::Bf16 => include_str!("wgsl/bf16.wgsl"),
            WeightFormat::Q2K => include_str!("wgsl/q2_k.wgsl"),
            WeightFormat::Q3K => concat!(
                include_str!("wgsl/bytes.wgsl"),
                include_str!("wgsl/q3_k.wgsl")
            ),
            WeightFormat::Q4K => concat!(
                include_str!("wgsl/k_scales.wgsl"),
                include_str!("wgsl/q4_k.wgsl")
            ),
            WeightFormat::Q5K => concat!(
                include_str!("wgsl/k_scales.wgsl"),
                include_str!("wgsl/q5_k.wgsl")
            ),
            WeightFormat::Q6K => concat!(
                include_str!("wgsl/bytes.wgsl"),
                include_str!("wgsl/q6_k.wgsl")
            ),
            WeightFormat::F32 => include_str!("wgsl/f32.wgsl"),
        }
    }

    /// Byte offsets of the f16 scales inside one block (tests make them finite).
    pub fn f16_offsets(self) -> &'static [usize] {
        match self {
            WeightFormat::Q4_1 | WeightFormat::Q5_1 | WeightFormat::Q4K | WeightFormat::Q5K => {
                &[0, 2]
            }
            WeightFormat::Q8_0 | WeightFormat::Q5_0 => &[0],
            WeightFormat::Q6K => &[208],
            WeightFormat::Q2K => &[80, 82],
            WeightFormat::Q3K => &[108],
            WeightFormat::F32 | WeightFormat::F16 | WeightFormat::Bf16 => &[],
        }
    }

    /// Decodes row `row` (`cols` weights) from the matrix bytes on the CPU, with `quant`'s
    /// scalar decoders (the ones the CPU forward pass and the GGUF reader use).
    pub fn dequantize_row(self, bytes: &[u8], row: usize, cols: usize) -> Vec<f32> {
        let row_bytes = self.matrix_bytes(1, cols);
        let data = &bytes[row * row_bytes..][..row_bytes];
        let mut out = vec![0f32; cols];
        let decode: fn(&[u8], &mut [f32]) = match self {
            WeightFormat::Q4_1 => quant::dequantize_q4_1,
            WeightFormat::Q8_0 => quant::dequantize_q8_0,
            WeightFormat::Q5_0 => quant::dequantize_q5_0,
            WeightFormat::Q5_1 => quant::dequantize_q5_1,
            WeightFormat::F16 => quant::dequantize_f16,
            WeightFormat::Bf16 => quant::dequantize_bf16,
            WeightFormat::Q2K => quant::dequantize_q2_k,
            WeightFormat::Q3K => quant::dequantize_q3_k,
            WeightFormat::Q4K => quant::dequantize_q4_k,
            WeightFormat::Q5K => quant::dequantize_q5_k,
            WeightFormat::Q6K => quant::dequantize_q6_k,
            WeightFormat::F32 => quant::dequantize_f32,
        };
        decode(data, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q4_1_layout() {
        let mut b = [0u8; 20];
        b[0..2].copy_from_slice(&0x3800u16.to_le_bytes()); // d = 0.5
        b[2..4].copy_from_slice(&0xBC00u16.to_le_bytes()); // m = -1
        for j in 0..16 {
            b[4 + j] = (j as u8) | ((15 - j as u8) << 4);
        }
        let w = WeightFormat::Q4_1.dequantize_row(&b, 0, 32);
        for j in 0..16 {
            assert_eq!(w[j], 0.5 * j as f32 - 1.0);
            assert_eq!(w[j + 16], 0.5 * (15 - j) as f32 - 1.0);
        }
    }

    #[test]
    fn q8_0_layout() {
        let mut b = [0u8; 68];
        b[34..36].copy_from_slice(&0x4000u16.to_le_bytes()); // d = 2 in row 1
        for j in 0..32 {
            b[36 + j] = (j as i8 - 16) as u8;
        }
        let w = WeightFormat::Q8_0.dequantize_row(&b, 1, 32);
        for (j, &x) in w.iter().enumerate() {
            assert_eq!(x, 2.0 * (j as f32 - 16.0));
        }
    }
}
