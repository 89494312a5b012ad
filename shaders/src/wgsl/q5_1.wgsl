// Q5_1 weights as the file stores them: 24-byte blocks = 6 words: word 0 = f16 d | f16 m,
// word 1 = qh (bit j: the fifth bit of weight j), words 2..5 = 16 nibble bytes (weight
// j < 16 the low nibble of byte j, weight j >= 16 the high nibble of byte j - 16);
// w = d * q + m.
fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let b = (row * nb + blk) * 6u;
    let dm = unpack2x16float(w[b]);
    let qh = w[b + 1u];
    let q = w[b + 2u + u];
    var out: array<f32, 8>;
    for (var i = 0u; i < 4u; i++) {
        let byte = (q >> (8u * i)) & 255u;
        let j = 4u * u + i;
        let lo = (byte & 15u) | (((qh >> j) & 1u) << 4u);
        let hi = (byte >> 4u) | (((qh >> (j + 16u)) & 1u) << 4u);
        out[i] = f32(lo) * dm.x + dm.y;
        out[i + 4u] = f32(hi) * dm.x + dm.y;
    }
    return out;
}
