//! [`WeightFormat`]: how a weight matrix lies in its GPU buffer, with the WGSL decoder
//! and a scalar CPU decoder of the same layout.

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

    /// Decodes row `row` (`cols` weights) from the matrix bytes on the CPU.
    pub fn dequantize_row(self, bytes: &[u8], row: usize, cols: usize) -> Vec<f32> {
        let nb = cols / 32;
        let bb = self.block_bytes();
        let mut out = vec![0f32; cols];
        for blk in 0..nb {
            let b = &bytes[(row * nb + blk) * bb..][..bb];
            let o = &mut out[blk * 32..][..32];
            match self {
                WeightFormat::Q4_1 => {
                    let d = half(b[0], b[1]);
                    let m = half(b[2], b[3]);
                    for j in 0..16 {
                        o[j] = (b[4 + j] & 15) as f32 * d + m;
                        o[j + 16] = (b[4 + j] >> 4) as f32 * d + m;
                    }
                }
                WeightFormat::Q8_0 => {
                    let d = half(b[0], b[1]);
                    for j in 0..32 {
                        o[j] = b[2 + j] as i8 as f32 * d;
                    }
                }
                WeightFormat::F32 => {
                    for (j, c) in b.as_chunks::<4>().0.iter().enumerate() {
                        o[j] = f32::from_le_bytes(*c);
                    }
                }
            }
        }
        out
    }
}

/// IEEE half (little-endian bytes) to f32, exactly (subnormals, infinities, NaN).
pub fn half(lo: u8, hi: u8) -> f32 {
    let h = u16::from_le_bytes([lo, hi]) as u32;
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (h >> 10) & 0x1F;
    let mant = h & 0x3FF;
    match exp {
        0 => sign * mant as f32 * (1.0 / 16_777_216.0),
        0x1F if mant == 0 => sign * f32::INFINITY,
        0x1F => f32::NAN,
        _ => f32::from_bits((h & 0x8000) << 16 | (exp + 112) << 23 | mant << 13),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves() {
        assert_eq!(half(0x00, 0x3C), 1.0);
        assert_eq!(half(0x00, 0xC0), -2.0);
        assert_eq!(half(0xFF, 0x7B), 65504.0);
        assert_eq!(half(0x01, 0x00), 2f32.powi(-24));
        assert_eq!(half(0x00, 0x7C), f32::INFINITY);
        assert!(half(0x00, 0x7E).is_nan());
    }

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
