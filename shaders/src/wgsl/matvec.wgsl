// out[t][r] = sum_c W[r][c] * x[t][c] for the tokens of this run, one workgroup per row
// and per group of TB tokens (workgroup_id.z). Each invocation decodes 8 weights at a time
// (one `load8` unit: elements 4u..4u+3 and 16+4u..16+4u+3 of a block) and uses them for
// TB tokens; partial sums are reduced in workgroup memory (f32 throughout).
// Modes (bits): 2 = tokens from step.first, written from row 0 (output head); where each
// result goes is `put` (matvec_out.wgsl: one output, mode 1 = accumulate, 4 = at token
// offset step.n_past; matvec_out_qkv.wgsl: q, k and v rows to three outputs).
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

const WG: u32 = 64u;
const TB: u32 = 4u;
var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = wid.y * nwg.x + wid.x;
    let rows = dims.rows;
    let cols = dims.cols;
    let nb = cols / 32u;
    let base_tok = select(0u, step.first, (dims.mode & 2u) != 0u);
    let t0 = base_tok + wid.z * TB;
    var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    if (row < rows) {
        for (var unit = lid; unit < nb * 4u; unit += WG) {
            let blk = unit >> 2u;
            let u = unit & 3u;
            var wv = load8(row, nb, blk, u);
            let c = blk * 32u + 4u * u;
            for (var t = 0u; t < TB; t++) {
                let tok = t0 + t;
                if (tok < step.n) {
                    let xb = tok * cols + c;
                    acc[t] += wv[0] * x[xb] + wv[1] * x[xb + 1u] + wv[2] * x[xb + 2u]
                        + wv[3] * x[xb + 3u] + wv[4] * x[xb + 16u] + wv[5] * x[xb + 17u]
                        + wv[6] * x[xb + 18u] + wv[7] * x[xb + 19u];
                }
            }
        }
    }
    for (var t = 0u; t < TB; t++) {
        partial[t * WG + lid] = acc[t];
    }
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            for (var t = 0u; t < TB; t++) {
                partial[t * WG + lid] += partial[t * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
    if (lid < TB && row < rows) {
        let tok = t0 + lid;
        if (tok < step.n) {
            put(tok - base_tok, row, partial[lid * WG]);
        }
    }
}
