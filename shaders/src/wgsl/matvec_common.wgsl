// What both product bodies (matvec.wgsl, matvec_rows.wgsl) share (after matvec_dims.wgsl):
// the weights and input bindings, and the 8-wide loads and dot product of one
// `load8` unit (elements c..c+3 and c+16..c+19 of a block). The input's values come from
// `x8` (matvec_x*.wgsl).
@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;
@group(0) @binding(4) var<uniform> step: Step;

const TB: u32 = 4u;

fn dot8(w: array<f32, 8>, x: array<f32, 8>) -> f32 {
    return w[0] * x[0] + w[1] * x[1] + w[2] * x[2] + w[3] * x[3]
        + w[4] * x[4] + w[5] * x[5] + w[6] * x[6] + w[7] * x[7];
}
