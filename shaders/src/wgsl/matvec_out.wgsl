// Where a matvec result goes, one output: row `g` of token `t` (counted from the first
// token the mode selects); mode 1 = accumulate, 4 = at the cache row of token t
// (cache_row).
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

// Rows a workgroup (or invocation) computes: one.
const ROWS: u32 = 1u;

fn rows_of(g: u32) -> vec2<u32> {
    return vec2<u32>(g, g);
}

fn put(t: u32, g: u32, v: f32, unused: f32) {
    var o = t * dims.rows + g;
    if ((dims.mode & 4u) != 0u) {
        o = cache_row(t) * dims.rows + g;
    }
    if ((dims.mode & 1u) != 0u) {
        out[o] += v;
    } else {
        out[o] = v;
    }
}
