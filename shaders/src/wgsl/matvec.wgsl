// out[t][r] = sum_c W[r][c] * x[t][c] for the tokens of this run, one workgroup per group
// of ROWS rows (rows_of: one row, or the pair a fused output combines) and per group of TB
// tokens (workgroup_id.z). Each invocation decodes 8 weights at a time (one `load8` unit:
// elements 4u..4u+3 and 16+4u..16+4u+3 of a block) and uses them for TB tokens; partial
// sums are reduced by `reduce` (matvec_reduce*.wgsl: in workgroup memory, or with subgroup
// sums first where the adapter has subgroups; f32 throughout).
// The input (matvec_in*.wgsl) may RMSNorm x on the way in: `scale8` multiplies the
// weights by the norm's, and the sums of squares of x[t], gathered in the same loop, give
// each token's `norm_scale`. Modes (bits): 2 = tokens from step.first, written from row 0
// (output head); where each result goes is `put` (matvec_out*.wgsl).

const WG: u32 = 64u;
// ROWS * TB dot products, then TB sums of squares, 64 partial sums each; `reduce` leaves
// sum i in partial[i * WG].
var<workgroup> partial: array<f32, 768>;

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let grp = wid.y * nwg.x + wid.x;
    let live = grp < dims.rows / ROWS;
    let r = rows_of(grp);
    let cols = dims.cols;
    let nb = cols / 32u;
    let base_tok = select(0u, step.first, (dims.mode & 2u) != 0u);
    let t0 = base_tok + wid.z * TB;
    var acc: array<f32, 8>;
    var sum_sq: array<f32, 4>;
    if (live) {
        for (var unit = lid; unit < nb * 4u; unit += WG) {
            let blk = unit >> 2u;
            let u = unit & 3u;
            let c = blk * 32u + 4u * u;
            let w0 = scale8(load8(r.x, nb, blk, u), c);
            var w1 = w0;
            if (ROWS == 2u) {
                w1 = scale8(load8(r.y, nb, blk, u), c);
            }
            for (var t = 0u; t < TB; t++) {
                let tok = t0 + t;
                if (tok < step.n) {
                    let xb = tok * cols + c;
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
    }
    var sums: array<f32, 12>;
    for (var i = 0u; i < ROWS * TB; i++) {
        sums[i] = acc[i];
    }
    for (var t = 0u; t < TB; t++) {
        sums[ROWS * TB + t] = sum_sq[t];
    }
    reduce(lid, sums, select(ROWS * TB, ROWS * TB + TB, NORM));
    if (lid < TB && live) {
        let tok = t0 + lid;
        if (tok < step.n) {
            var scale = 1.0;
            if (NORM) {
                scale = norm_scale(partial[(ROWS * TB + lid) * WG]);
            }
            put(tok - base_tok, grp, partial[lid * WG] * scale, partial[(TB + lid) * WG] * scale);
        }
    }
}
