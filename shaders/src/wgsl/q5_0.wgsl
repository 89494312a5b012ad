// Q5_0 weights as the file stores them (22-byte blocks: f16 d, u32 qh, 16 nibble bytes;
// weight j < 16 is the low nibble of byte j, weight j >= 16 the high nibble of byte j - 16,
// bit j of qh is its fifth bit; w = d * (q - 16)), indexed by byte inside the u32 array.
// Blocks start at even byte offsets, so a 4-byte read at byte `a` is one word or two
// halves.

fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let a = (row * nb + blk) * 22u;
    let d = unpack2x16float(word_at(a)).x;
    let qh = word_at(a + 2u);
    let q = word_at(a + 6u + 4u * u);
    var out: array<f32, 8>;
    for (var i = 0u; i < 4u; i++) {
        let byte = (q >> (8u * i)) & 255u;
        let j = 4u * u + i;
        let lo = (byte & 15u) | (((qh >> j) & 1u) << 4u);
        let hi = (byte >> 4u) | (((qh >> (j + 16u)) & 1u) << 4u);
        out[i] = f32(i32(lo) - 16) * d;
        out[i + 4u] = f32(i32(hi) - 16) * d;
    }
    return out;
}
