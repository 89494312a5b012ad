// Byte addressing inside the u32 weight array `w`, for formats whose blocks are not a
// whole number of words (Q8_0's 34 bytes, Q5_0's 22, Q3_K's 110, Q6_K's 210). Blocks
// start at even byte offsets, so a 4-byte read at byte `a` is either one word
// (a % 4 == 0) or two halves (a % 4 == 2).
fn word_at(a: u32) -> u32 {
    let i = a >> 2u;
    if ((a & 3u) == 0u) {
        return w[i];
    }
    return (w[i] >> 16u) | (w[i + 1u] << 16u);
}

fn byte_at(a: u32) -> u32 {
    return (w[a >> 2u] >> (8u * (a & 3u))) & 255u;
}
