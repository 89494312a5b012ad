// Q4_1 weights as the file stores them, read as u32 words: a block of 32 weights is
// 20 bytes = 5 words: word 0 = f16 d (low half) | f16 m (high half); words 1..4 = the 16
// nibble bytes. Byte j holds weight j (low nibble) and weight j + 16 (high nibble);
// w = d * q + m. Rows are `nb` consecutive blocks.
fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let b = (row * nb + blk) * 5u;
    let dm = unpack2x16float(w[b]);
    let q = w[b + 1u + u];
    return array<f32, 8>(
        f32(q & 15u) * dm.x + dm.y,
        f32((q >> 8u) & 15u) * dm.x + dm.y,
        f32((q >> 16u) & 15u) * dm.x + dm.y,
        f32((q >> 24u) & 15u) * dm.x + dm.y,
        f32((q >> 4u) & 15u) * dm.x + dm.y,
        f32((q >> 12u) & 15u) * dm.x + dm.y,
        f32((q >> 20u) & 15u) * dm.x + dm.y,
        f32(q >> 28u) * dm.x + dm.y,
    );
}
