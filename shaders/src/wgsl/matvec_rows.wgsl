// The same product as matvec.wgsl with one invocation per group of ROWS rows (64 groups
// per workgroup) and no workgroup memory or barriers: for CPU adapters (lavapipe,
// SwiftShader), where a barrier is costly and wide rows per invocation are cheap. The
// input and output functions are matvec.wgsl's.

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let grp = (wid.y * nwg.x + wid.x) * 64u + lid;
    if (grp >= dims.rows / ROWS) {
        return;
    }
    let r = rows_of(grp);
    let cols = dims.cols;
    let nb = cols / 32u;
    let base_tok = select(0u, step.first, (dims.mode & 2u) != 0u);
    let t0 = base_tok + wid.z * TB;
    let tn = min(TB, step.n - min(step.n, t0));
    var acc: array<f32, 8>;
    var sum_sq: array<f32, 4>;
    if (tn == 1u) {
        // Decoding one token: scalar accumulators, no per-token loop.
        let xt = t0 * cols;
        var s0 = 0.0;
        var s1 = 0.0;
        var sq = 0.0;
        for (var unit = 0u; unit < nb * 4u; unit++) {
            let blk = unit >> 2u;
            let u = unit & 3u;
            let c = blk * 32u + 4u * u;
            let xb = xt + c;
            let xv = x8(xb);
            s0 += dot8(scale8(load8(r.x, nb, blk, u), c), xv);
            if (ROWS == 2u) {
                s1 += dot8(scale8(load8(r.y, nb, blk, u), c), xv);
            }
            if (NORM) {
                sq += dot8(xv, xv);
            }
        }
        acc[0] = s0;
        acc[TB] = s1;
        sum_sq[0] = sq;
    } else {
    for (var unit = 0u; unit < nb * 4u; unit++) {
        let blk = unit >> 2u;
        let u = unit & 3u;
        let c = blk * 32u + 4u * u;
        let w0 = scale8(load8(r.x, nb, blk, u), c);
        var w1 = w0;
        if (ROWS == 2u) {
            w1 = scale8(load8(r.y, nb, blk, u), c);
        }
        for (var t = 0u; t < tn; t++) {
            let xb = (t0 + t) * cols + c;
            let xv = x8(xb);
            acc[t] += dot8(w0, xv);
            if (ROWS == 2u) {
                acc[TB + t] += dot8(w1, xv);
            }
            if (NORM) {
                sum_sq[t] += dot8(xv, xv);
            }
        }
    }
    }
    for (var t = 0u; t < tn; t++) {
        let scale = norm_scale(sum_sq[t]);
        put(t0 + t - base_tok, grp, acc[t] * scale, acc[TB + t] * scale);
    }
}
