// The input's values that meet one `load8` unit starting at float `xb` of x.
fn x8(xb: u32) -> array<f32, 8> {
    return array<f32, 8>(
        x[xb], x[xb + 1u], x[xb + 2u], x[xb + 3u],
        x[xb + 16u], x[xb + 17u], x[xb + 18u], x[xb + 19u],
    );
}
