// Masked sampling, pass 1 of 2: per block of 1024 tokens, the maximum logit and the sum of
// exp(logit - that maximum), over all tokens and over the tokens the mask keeps.
// stats[4b..4b+4] = (max_all, max_kept, sum_all, sum_kept); max_kept = NONE when the
// block keeps no token. One workgroup of 64 per block (few barriers, which CPU adapters
// such as lavapipe and SwiftShader pay for); invocation i owns tokens 16i..16i+15.
struct Params {
    vocab: u32,
    blocks: u32,
    u: f32,
    offset: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> mask: array<u32>;
@group(0) @binding(2) var<storage, read_write> stats: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

const WG: u32 = 64u;
const PER: u32 = 16u;
const BLOCK: u32 = 1024u;
const NONE: f32 = -3.0e38;

var<workgroup> red_all: array<f32, 64>;
var<workgroup> red_kept: array<f32, 64>;

fn kept(t: u32) -> bool {
    return ((mask[t >> 5u] >> (t & 31u)) & 1u) != 0u;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) i: u32) {
    let b = wg.x;
    let first = b * BLOCK + i * PER;
    var m_all = NONE;
    var m_kept = NONE;
    for (var k = 0u; k < PER; k++) {
        let t = first + k;
        if (t < params.vocab) {
            let l = logits[params.offset + t];
            m_all = max(m_all, l);
            if (kept(t)) {
                m_kept = max(m_kept, l);
            }
        }
    }
    red_all[i] = m_all;
    red_kept[i] = m_kept;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (i < s) {
            red_all[i] = max(red_all[i], red_all[i + s]);
            red_kept[i] = max(red_kept[i], red_kept[i + s]);
        }
        workgroupBarrier();
    }
    let bm_all = red_all[0];
    let bm_kept = red_kept[0];
    workgroupBarrier();
    var s_all = 0.0;
    var s_kept = 0.0;
    for (var k = 0u; k < PER; k++) {
        let t = first + k;
        if (t < params.vocab) {
            let l = logits[params.offset + t];
            s_all += exp(l - bm_all);
            if (kept(t)) {
                s_kept += exp(l - bm_kept);
            }
        }
    }
    red_all[i] = s_all;
    red_kept[i] = s_kept;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (i < s) {
            red_all[i] += red_all[i + s];
            red_kept[i] += red_kept[i + s];
        }
        workgroupBarrier();
    }
    if (i == 0u && b < params.blocks) {
        stats[4u * b] = bm_all;
        stats[4u * b + 1u] = bm_kept;
        stats[4u * b + 2u] = red_all[0];
        stats[4u * b + 3u] = red_kept[0];
    }
}
