// gate[i] = silu(gate[i]) * up[i] for i < step.n * dims.x.
@group(0) @binding(0) var<storage, read_write> gate: array<f32>;
@group(0) @binding(1) var<storage, read> up: array<f32>;
@group(0) @binding(2) var<uniform> dims: vec4<u32>;
@group(0) @binding(3) var<uniform> step: Step;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.y * nwg.x * 64u + gid.x;
    if (i >= step.n * dims.x) {
        return;
    }
    let a = gate[i];
    gate[i] = a / (1.0 + exp(-a)) * up[i];
}
