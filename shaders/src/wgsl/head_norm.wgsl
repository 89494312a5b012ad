// In place: each head h of the run's row t, v[r][h * d .. (h + 1) * d], becomes
// head / sqrt(mean(head^2) + eps) * g, with r = t, or cache_row(t) when dims.cache = 1
// (rows of the KV cache). One workgroup per (head, token).
struct Dims {
    d: u32,
    eps: f32,
    heads: u32,
    cache: u32,
}

@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<uniform> dims: Dims;
@group(0) @binding(3) var<uniform> step: Step;

var<workgroup> red: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wid.y;
    if (t >= step.n || wid.x >= dims.heads) {
        return;
    }
    let d = dims.d;
    let row = select(t, cache_row(t), dims.cache == 1u);
    let b = (row * dims.heads + wid.x) * d;
    var s = 0.0;
    for (var i = lid; i < d; i += 64u) {
        let x = v[b + i];
        s += x * x;
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
        v[b + i] = v[b + i] * scale * g[i];
    }
}
