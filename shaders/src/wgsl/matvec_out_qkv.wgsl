// Where a matvec result goes when the matrix is q, k and v stacked (dims.pad = q's rows,
// then k's and v's, kv rows each): q rows to `out` at token t, k and v rows to the two
// caches at token step.n_past + t.
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_k: array<f32>;
@group(0) @binding(6) var<storage, read_write> out_v: array<f32>;

const ROWS: u32 = 1u;

fn rows_of(g: u32) -> vec2<u32> {
    return vec2<u32>(g, g);
}

fn store_qkv(t: u32, row: u32, v: f32) {
    let nq = dims.pad;
    let kv = (dims.rows - nq) / 2u;
    if (row < nq) {
        out[t * nq + row] = v;
    } else if (row < nq + kv) {
        out_k[(step.n_past + t) * kv + row - nq] = v;
    } else {
        out_v[(step.n_past + t) * kv + row - nq - kv] = v;
    }
}

fn put(t: u32, g: u32, v: f32, unused: f32) {
    store_qkv(t, g, v);
}
