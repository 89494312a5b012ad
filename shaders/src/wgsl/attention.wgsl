// Causal grouped-query attention of the step.n new tokens over the KV cache (positions
// 0..step.n_past + t + 1 for token t), one workgroup per (head, token). Scores go to a
// scratch buffer (max_ctx floats per head and token), then softmax, then the weighted sum
// of values (each invocation owns dimensions lid, lid + 64, ... of the head).
struct Dims {
    n_heads: u32,
    group: u32,
    head_dim: u32,
    kv_dim: u32,
    max_ctx: u32,
    scale: f32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> kc: array<f32>;
@group(0) @binding(2) var<storage, read> vc: array<f32>;
@group(0) @binding(3) var<storage, read_write> scores: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<uniform> dims: Dims;
@group(0) @binding(6) var<uniform> step: Step;

var<workgroup> red: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    let t = wid.y;
    let hd = dims.head_dim;
    let visible = step.n_past + t + 1u;
    let g = h / dims.group;
    let qb = (t * dims.n_heads + h) * hd;
    let sb = (t * dims.n_heads + h) * dims.max_ctx;
    var m = -3.4e38;
    for (var j = lid; j < visible; j += 64u) {
        let kb = j * dims.kv_dim + g * hd;
        var s = 0.0;
        for (var i = 0u; i < hd; i++) {
            s += q[qb + i] * kc[kb + i];
        }
        s *= dims.scale;
        scores[sb + j] = s;
        m = max(m, s);
    }
    red[lid] = m;
    workgroupBarrier();
    for (var k = 32u; k > 0u; k >>= 1u) {
        if (lid < k) {
            red[lid] = max(red[lid], red[lid + k]);
        }
        workgroupBarrier();
    }
    let mx = red[0];
    workgroupBarrier();
    var sum = 0.0;
    for (var j = lid; j < visible; j += 64u) {
        let e = exp(scores[sb + j] - mx);
        scores[sb + j] = e;
        sum += e;
    }
    red[lid] = sum;
    storageBarrier();
    workgroupBarrier();
    for (var k = 32u; k > 0u; k >>= 1u) {
        if (lid < k) {
            red[lid] += red[lid + k];
        }
        workgroupBarrier();
    }
    let inv = 1.0 / red[0];
    for (var i = lid; i < hd; i += 64u) {
        var acc = 0.0;
        for (var j = 0u; j < visible; j++) {
            acc += scores[sb + j] * vc[j * dims.kv_dim + g * hd + i];
        }
        out[qb + i] = acc * inv;
    }
}
