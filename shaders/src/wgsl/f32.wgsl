// Plain f32 weights (F32 tensors, and F16 ones converted on upload), as u32 bits.
fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let b = (row * nb + blk) * 32u + 4u * u;
    return array<f32, 8>(
        bitcast<f32>(w[b]),
        bitcast<f32>(w[b + 1u]),
        bitcast<f32>(w[b + 2u]),
        bitcast<f32>(w[b + 3u]),
        bitcast<f32>(w[b + 16u]),
        bitcast<f32>(w[b + 17u]),
        bitcast<f32>(w[b + 18u]),
        bitcast<f32>(w[b + 19u]),
    );
}
