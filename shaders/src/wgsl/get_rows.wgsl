// out[t] = row tokens[t] of W, dequantized (the token embedding), for t < step.n.
// Invocation (x: unit within the row, y: token).
@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;
@group(0) @binding(4) var<uniform> step: Step;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.y;
    let unit = gid.x;
    let nb = dims.cols / 32u;
    if (t >= step.n || unit >= nb * 4u) {
        return;
    }
    let row = min(tokens[t], dims.rows - 1u);
    let blk = unit >> 2u;
    let u = unit & 3u;
    var wv = load8(row, nb, blk, u);
    let o = t * dims.cols + blk * 32u + 4u * u;
    for (var i = 0u; i < 4u; i++) {
        out[o + i] = wv[i];
        out[o + 16u + i] = wv[4u + i];
    }
}
