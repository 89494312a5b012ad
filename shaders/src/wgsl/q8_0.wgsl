// Q8_0 weights as the file stores them (34-byte blocks: f16 d, 32 signed bytes; w = d * q),
// indexed by byte inside the u32 array: no repacking, so the GPU holds exactly the file's
// bytes. Blocks start at even byte offsets, so a halfword never straddles two words and a
// 4-byte read at byte `a` is either one word (a % 4 == 0) or two halves (a % 4 == 2).

fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let a = (row * nb + blk) * 34u;
    let d = unpack2x16float(w[a >> 2u] >> (8u * (a & 3u))).x;
    let lo = i32(word_at(a + 2u + 4u * u));
    let hi = i32(word_at(a + 18u + 4u * u));
    return array<f32, 8>(
        f32(extractBits(lo, 0u, 8u)) * d,
        f32(extractBits(lo, 8u, 8u)) * d,
        f32(extractBits(lo, 16u, 8u)) * d,
        f32(extractBits(lo, 24u, 8u)) * d,
        f32(extractBits(hi, 0u, 8u)) * d,
        f32(extractBits(hi, 8u, 8u)) * d,
        f32(extractBits(hi, 16u, 8u)) * d,
        f32(extractBits(hi, 24u, 8u)) * d,
    );
}
