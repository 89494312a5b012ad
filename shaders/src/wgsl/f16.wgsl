// F16 weights as the file stores them: two halves per u32 word, 16 words per 32 weights.
fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let b = (row * nb + blk) * 16u + 2u * u;
    let a = unpack2x16float(w[b]);
    let c = unpack2x16float(w[b + 1u]);
    let e = unpack2x16float(w[b + 8u]);
    let g = unpack2x16float(w[b + 9u]);
    return array<f32, 8>(a.x, a.y, c.x, c.y, e.x, e.y, g.x, g.y);
}
