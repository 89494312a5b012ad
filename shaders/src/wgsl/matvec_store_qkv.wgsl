// Stores row `row` of token t of a stacked q, k, v product (dims.extra = q's rows, then k's
// and v's, kv rows each): q rows to `out` at token t, k and v rows to the two caches at
// cache_row(t), rounded to the caches' kv_t (KvFormat).
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_k: array<kv_t>;
@group(0) @binding(6) var<storage, read_write> out_v: array<kv_t>;

fn store_qkv(t: u32, row: u32, v: f32) {
    let nq = dims.extra;
    let kv = (dims.rows - nq) / 2u;
    if (row < nq) {
        out[t * nq + row] = v;
    } else if (row < nq + kv) {
        out_k[cache_row(t) * kv + row - nq] = kv_t(v);
    } else {
        out_v[cache_row(t) * kv + row - nq - kv] = kv_t(v);
    }
}
