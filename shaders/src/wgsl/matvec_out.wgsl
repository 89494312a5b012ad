// Where a matvec result goes, one output: row `row` of token `t` (counted from the first
// token the mode selects); mode 1 = accumulate, 4 = at token offset step.n_past.
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

fn put(t: u32, row: u32, v: f32) {
    var o = t * dims.rows + row;
    if ((dims.mode & 4u) != 0u) {
        o += step.n_past * dims.rows;
    }
    if ((dims.mode & 1u) != 0u) {
        out[o] += v;
    } else {
        out[o] = v;
    }
}
