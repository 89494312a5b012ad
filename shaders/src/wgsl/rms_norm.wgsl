// out[t] = x[t] / sqrt(mean(x[t]^2) + eps) * g, one workgroup per token t < step.n.
struct Dims {
    d: u32,
    eps: f32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;
@group(0) @binding(4) var<uniform> step: Step;

var<workgroup> red: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wid.x;
    if (t >= step.n) {
        return;
    }
    let d = dims.d;
    let b = t * d;
    var s = 0.0;
    for (var i = lid; i < d; i += 64u) {
        let v = x[b + i];
        s += v * v;
    }
    red[lid] = s;
    workgroupBarrier();
    for (var k = 32u; k > 0u; k >>= 1u) {
        if (lid < k) {
            red[lid] += red[lid + k];
        }
        workgroupBarrier();
    }
    let scale = 1.0 / sqrt(red[0] / f32(d) + dims.eps);
    for (var i = lid; i < d; i += 64u) {
        out[b + i] = x[b + i] * scale * g[i];
    }
}
