//! [`WeightFormat`]: how a weight matrix lies in its GPU buffer, with the WGSL decoder
//! and the CPU decoder of the same layout (`quant`'s scalar dequantizers).

/// The encoding of a weight matrix on the GPU. Rows are `cols / 32` consecutive blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WeightFormat {
    /// GGUF Q4_1 blocks as in the file: 20 bytes (f16 d, f16 m, 16 nibble bytes) per 32.
    Q4_1,
    /// GGUF Q8_0 blocks as in the file: 34 bytes (f16 d, 32 i8) per 32, not repacked.
    Q8_0,
    /// Little-endian f32.
    F32,
}

impl WeightFormat {
    /// Bytes per 32 weights.
    pub fn block_bytes(self) -> usize {
        match self {
            WeightFormat::Q4_1 => 20,
            WeightFormat::Q8_0 => 34,
            WeightFormat::F32 => 128,
        }
    }

    /// Bytes of a `rows × cols` matrix.
    pub fn matrix_bytes(self, rows: usize, cols: usize) -> usize {
        rows * (cols / 32) * self.block_bytes()
    }

    /// The WGSL `load8` decoder of this format.
    pub(crate) fn wgsl(self) -> &'static str {
        match self {
            WeightFormat::Q4_1 => include_str!("wgsl/q4_1.wgsl"),
            WeightFormat::Q8_0 => include_str!("wgsl/q8_0.wgsl"),
            WeightFormat::F32 => include_str!("wgsl/f32.wgsl"),
        }
    }

    /// Decodes row `row` (`cols` weights) from the matrix bytes on the CPU, with `quant`'s
    /// scalar decoders (the ones the CPU forward pass and the GGUF reader use).
    pub fn dequantize_row(self, bytes: &[u8], row: usize, cols: usize) -> Vec<f32> {
        let row_bytes = (cols / 32) * self.block_bytes();
        let data = &bytes[row * row_bytes..][..row_bytes];
        let mut out = vec![0f32; cols];
        match self {
            WeightFormat::Q4_1 => quant::dequantize_q4_1(data, &mut out),
            WeightFormat::Q8_0 => quant::dequantize_q8_0(data, &mut out),
            WeightFormat::F32 => quant::dequantize_f32(data, &mut out),
        }
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
