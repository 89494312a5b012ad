// Where a matvec result goes when the matrix is q, k and v stacked: each row as
// matvec_store_qkv.wgsl stores it.
const ROWS: u32 = 1u;

fn rows_of(g: u32) -> vec2<u32> {
    return vec2<u32>(g, g);
}

fn put(t: u32, g: u32, v: f32, unused: f32) {
    store_qkv(t, g, v);
}
