// v[r][j] += bias[j] for the run's rows r: r = t, or cache_row(t) when dims.y = 1 (rows of
// the KV cache). Invocation (x: column, y: token).
@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
@group(0) @binding(2) var<uniform> dims: vec4<u32>;
@group(0) @binding(3) var<uniform> step: Step;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.y;
    let j = gid.x;
    if (t >= step.n || j >= dims.x) {
        return;
    }
    let row = select(t, cache_row(t), dims.y == 1u);
    v[row * dims.x + j] += bias[j];
}
