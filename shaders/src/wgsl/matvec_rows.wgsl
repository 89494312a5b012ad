// The same product as matvec.wgsl with one invocation per row (64 rows per workgroup) and
// no workgroup memory or barriers: for CPU adapters (lavapipe, SwiftShader), where a
// barrier is costly and wide rows per invocation are cheap.
struct Dims {
    rows: u32,
    cols: u32,
    mode: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;
@group(0) @binding(4) var<uniform> step: Step;

const TB: u32 = 4u;

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = (wid.y * nwg.x + wid.x) * 64u + lid;
    let rows = dims.rows;
    if (row >= rows) {
        return;
    }
    let cols = dims.cols;
    let nb = cols / 32u;
    let base_tok = select(0u, step.first, (dims.mode & 2u) != 0u);
    let t0 = base_tok + wid.z * TB;
    let tn = min(TB, step.n - min(step.n, t0));
    var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    if (tn == 1u) {
        // Decoding one token: a scalar accumulator, no per-token loop.
        let xt = t0 * cols;
        var s = 0.0;
        for (var unit = 0u; unit < nb * 4u; unit++) {
            let blk = unit >> 2u;
            let u = unit & 3u;
            var wv = load8(row, nb, blk, u);
            let xb = xt + blk * 32u + 4u * u;
            s += wv[0] * x[xb] + wv[1] * x[xb + 1u] + wv[2] * x[xb + 2u]
                + wv[3] * x[xb + 3u] + wv[4] * x[xb + 16u] + wv[5] * x[xb + 17u]
                + wv[6] * x[xb + 18u] + wv[7] * x[xb + 19u];
        }
        acc[0] = s;
    } else {
    for (var unit = 0u; unit < nb * 4u; unit++) {
        let blk = unit >> 2u;
        let u = unit & 3u;
        var wv = load8(row, nb, blk, u);
        let c = blk * 32u + 4u * u;
        for (var t = 0u; t < tn; t++) {
            let xb = (t0 + t) * cols + c;
            acc[t] += wv[0] * x[xb] + wv[1] * x[xb + 1u] + wv[2] * x[xb + 2u]
                + wv[3] * x[xb + 3u] + wv[4] * x[xb + 16u] + wv[5] * x[xb + 17u]
                + wv[6] * x[xb + 18u] + wv[7] * x[xb + 19u];
        }
    }
    }
    for (var t = 0u; t < tn; t++) {
        put(t0 + t - base_tok, row, acc[t]);
    }
}
