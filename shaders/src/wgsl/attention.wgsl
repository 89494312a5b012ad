// Causal grouped-query attention of the step.n new tokens over the KV cache (token t sees
// positions 0..pos_of(t) + 1 of its own sequence, from cache row step.at[t].y), one
// workgroup per (head, token). Scores go to a
// scratch buffer (max_ctx floats per head and token), then softmax, then the weighted sum
// of values. Every loop over positions is split across the 64 invocations: a loop that
// walks all positions in one invocation waits out one memory latency per position, which
// on a GPU costs more than the arithmetic (decode slowed by a quarter from 61 to 157
// positions on an H100 when the value sum was such a loop). The caches hold kv_t (f32, or
// f16 where the device has it: KvFormat), widened to f32 as they are read. Where each
// head's result goes is `put_head` and `end_head` (attention_out*.wgsl): to `out`, or through
// the head's columns of the output matrix to the head's share of the output product.
struct Dims {
    n_heads: u32,
    group: u32,
    head_dim: u32,
    kv_dim: u32,
    max_ctx: u32,
    scale: f32,
    // The output matrix's rows (d_model) where the heads' shares are written, else 0.
    out_rows: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> kc: array<kv_t>;
@group(0) @binding(2) var<storage, read> vc: array<kv_t>;
@group(0) @binding(3) var<storage, read_write> scores: array<f32>;
@group(0) @binding(5) var<uniform> dims: Dims;
@group(0) @binding(6) var<uniform> step: Step;

var<workgroup> red: array<f32, 64>;
// The value sum's partial sums: 4 position phases × 64 dimensions.
var<workgroup> part: array<f32, 256>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    let t = wid.y;
    let hd = dims.head_dim;
    let visible = pos_of(t) + 1u;
    // Row of the first position of token t's sequence in the caches.
    let row0 = step.at[t].y;
    let g = h / dims.group;
    let qb = (t * dims.n_heads + h) * hd;
    let sb = (t * dims.n_heads + h) * dims.max_ctx;
    let hd4 = hd & ~3u;
    var m = -3.4e38;
    for (var j = lid; j < visible; j += 64u) {
        let kb = (row0 + j) * dims.kv_dim + g * hd;
        // Four running sums, so that the loads of one step need not wait for the last.
        var s0 = 0.0;
        var s1 = 0.0;
        var s2 = 0.0;
        var s3 = 0.0;
        for (var i = 0u; i < hd4; i += 4u) {
            s0 += q[qb + i] * f32(kc[kb + i]);
            s1 += q[qb + i + 1u] * f32(kc[kb + i + 1u]);
            s2 += q[qb + i + 2u] * f32(kc[kb + i + 2u]);
            s3 += q[qb + i + 3u] * f32(kc[kb + i + 3u]);
        }
        for (var i = hd4; i < hd; i++) {
            s0 += q[qb + i] * f32(kc[kb + i]);
        }
        let s = ((s0 + s1) + (s2 + s3)) * dims.scale;
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
    // Values, 64 dimensions at a time: invocation lid takes dimensions dl, dl + 16,
    // dl + 32, dl + 48 of the 64 at positions phase, phase + 4, ...; then each
    // dimension's four phases are added.
    let dl = lid % 16u;
    let phase = lid / 16u;
    for (var base = 0u; base < hd; base += 64u) {
        var a0 = 0.0;
        var a1 = 0.0;
        var a2 = 0.0;
        var a3 = 0.0;
        let vb = g * hd + base + dl;
        for (var j = phase; j < visible; j += 4u) {
            let p = scores[sb + j];
            let row = (row0 + j) * dims.kv_dim + vb;
            if (base + dl < hd) {
                a0 += p * f32(vc[row]);
            }
            if (base + dl + 16u < hd) {
                a1 += p * f32(vc[row + 16u]);
            }
            if (base + dl + 32u < hd) {
                a2 += p * f32(vc[row + 32u]);
            }
            if (base + dl + 48u < hd) {
                a3 += p * f32(vc[row + 48u]);
            }
        }
        let pb = phase * 64u + dl;
        part[pb] = a0;
        part[pb + 16u] = a1;
        part[pb + 32u] = a2;
        part[pb + 48u] = a3;
        workgroupBarrier();
        if (base + lid < hd) {
            let acc = (part[lid] + part[64u + lid]) + (part[128u + lid] + part[192u + lid]);
            put_head(qb, base + lid, acc * inv);
        }
        workgroupBarrier();
    }
    end_head(h, t, lid);
}
