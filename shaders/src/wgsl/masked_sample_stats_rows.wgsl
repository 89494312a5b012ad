// Masked sampling, pass 1 of 2, for CPU adapters (lavapipe, SwiftShader): no barriers, one
// invocation per block of 256 tokens, each a single online-softmax pass (running maximum,
// sum rescaled when the maximum grows). stats[4b..4b+4] = (max_all, max_kept, sum_all,
// sum_kept), max_kept = NONE when the block keeps no token — as in the workgroup variant.
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

const BLOCK: u32 = 256u;
const NONE: f32 = -3.0e38;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let b = gid.x;
    if (b >= params.blocks) {
        return;
    }
    var m_all = NONE;
    var m_kept = NONE;
    var s_all = 0.0;
    var s_kept = 0.0;
    let end = min((b + 1u) * BLOCK, params.vocab);
    for (var w = b * (BLOCK / 32u); w * 32u < end; w++) {
        let bits = mask[w];
        for (var k = 0u; k < 32u; k++) {
            let t = w * 32u + k;
            if (t >= end) {
                break;
            }
            let l = logits[params.offset + t];
            if (l > m_all) {
                s_all = s_all * exp(m_all - l) + 1.0;
                m_all = l;
            } else {
                s_all += exp(l - m_all);
            }
            if (((bits >> k) & 1u) != 0u) {
                if (l > m_kept) {
                    s_kept = s_kept * exp(m_kept - l) + 1.0;
                    m_kept = l;
                } else {
                    s_kept += exp(l - m_kept);
                }
            }
        }
    }
    stats[4u * b] = m_all;
    stats[4u * b + 1u] = m_kept;
    stats[4u * b + 2u] = s_all;
    stats[4u * b + 3u] = s_kept;
}
