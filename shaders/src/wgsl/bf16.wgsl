// BF16 weights as the file stores them: two per u32 word, 16 words per 32 weights; a
// bfloat16 is the top half of an f32.
fn bf16_pair(v: u32) -> vec2<f32> {
    return vec2<f32>(bitcast<f32>(v << 16u), bitcast<f32>(v & 0xFFFF0000u));
}

fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let b = (row * nb + blk) * 16u + 2u * u;
    let a = bf16_pair(w[b]);
    let c = bf16_pair(w[b + 1u]);
    let e = bf16_pair(w[b + 8u]);
    let g = bf16_pair(w[b + 9u]);
    return array<f32, 8>(a.x, a.y, c.x, c.y, e.x, e.y, g.x, g.y);
}
