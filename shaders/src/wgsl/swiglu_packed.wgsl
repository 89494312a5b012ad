// out[t][i] = silu(gu[t][i]) * gu[t][w + i] for t < step.n, i < w = dims.x: the gate and
// up products of one token side by side in `gu` (one matvec over the two matrices stacked).
@group(0) @binding(0) var<storage, read> gu: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> dims: vec4<u32>;
@group(0) @binding(3) var<uniform> step: Step;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.y * nwg.x * 64u + gid.x;
    let w = dims.x;
    if (i >= step.n * w) {
        return;
    }
    let t = i / w;
    let at = t * 2u * w + (i - t * w);
    let a = gu[at];
    out[i] = a / (1.0 + exp(-a)) * gu[at + w];
}
