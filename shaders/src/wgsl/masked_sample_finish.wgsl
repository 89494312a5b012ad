// Masked sampling, pass 2 of 2 (one workgroup): combines the block statistics into the
// log-sum-exp of all logits and of the kept logits, then draws the kept token at the
// inverse CDF of the masked softmax at u: the first kept token t whose cumulative weight
// exceeds u * (total kept weight) — first the block, from the block sums, then, inside the
// block, the invocation's 16-token chunk and the token. Rounding can leave u * total past
// the last cumulative sum: then the last token of positive weight is drawn.
// result = (token or NONE_TOKEN, log Z, log-sum-exp kept, log-sum-exp all, the token's
// logit).
struct Params {
    vocab: u32,
    blocks: u32,
    u: f32,
    offset: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read> mask: array<u32>;
@group(0) @binding(2) var<storage, read> stats: array<f32>;
@group(0) @binding(3) var<storage, read_write> result: array<u32>;
@group(0) @binding(4) var<uniform> params: Params;

const WG: u32 = 64u;
const PER: u32 = 16u;
const BLOCK: u32 = 1024u;
const NONE: f32 = -3.0e38;
const NONE_TOKEN: u32 = 0xFFFFFFFFu;

var<workgroup> red_all: array<f32, 64>;
var<workgroup> red_kept: array<f32, 64>;
var<workgroup> chunk: array<f32, 64>;
var<workgroup> sel_block: u32;
var<workgroup> sel_rest: f32;

fn kept(t: u32) -> bool {
    return ((mask[t >> 5u] >> (t & 31u)) & 1u) != 0u;
}

// Weight of token t (0 if masked out or past the vocabulary) relative to a block maximum.
fn weight(t: u32, bm: f32) -> f32 {
    if (t >= params.vocab || !kept(t)) {
        return 0.0;
    }
    return exp(logits[params.offset + t] - bm);
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32) {
    let nb = params.blocks;
    // Global maxima.
    var m_all = NONE;
    var m_kept = NONE;
    for (var b = i; b < nb; b += WG) {
        m_all = max(m_all, stats[4u * b]);
        m_kept = max(m_kept, stats[4u * b + 1u]);
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
    let g_all = red_all[0];
    let g_kept = red_kept[0];
    workgroupBarrier();
    // Global sums, each block's sum rescaled to the global maximum.
    var s_all = 0.0;
    var s_kept = 0.0;
    for (var b = i; b < nb; b += WG) {
        s_all += stats[4u * b + 2u] * exp(stats[4u * b] - g_all);
        if (stats[4u * b + 1u] > NONE) {
            s_kept += stats[4u * b + 3u] * exp(stats[4u * b + 1u] - g_kept);
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
    let total_all = red_all[0];
    let total_kept = red_kept[0];

    // The block: the first whose cumulative kept weight exceeds u * total.
    if (i == 0u) {
        sel_block = NONE_TOKEN;
        sel_rest = 0.0;
        if (g_kept > NONE && total_kept > 0.0) {
            let goal = params.u * total_kept;
            var acc = 0.0;
            var last = NONE_TOKEN;
            for (var b = 0u; b < nb; b++) {
                let bm = stats[4u * b + 1u];
                if (bm > NONE) {
                    let scale = exp(bm - g_kept);
                    let c = stats[4u * b + 3u] * scale;
                    if (c > 0.0) {
                        if (acc + c > goal) {
                            sel_block = b;
                            // What is left of the goal, in the block's own scale.
                            sel_rest = (goal - acc) / scale;
                            break;
                        }
                        acc += c;
                        last = b;
                    }
                }
            }
            if (sel_block == NONE_TOKEN) {
                sel_block = last;
                sel_rest = 3.0e38;
            }
        }
    }
    let b = workgroupUniformLoad(&sel_block);
    if (b == NONE_TOKEN) {
        if (i == 0u) {
            result[0] = NONE_TOKEN;
            result[1] = 0u;
            result[2] = 0u;
            result[3] = bitcast<u32>(g_all + log(total_all));
        }
        return;
    }
    // Chunk sums of the chosen block, in token order.
    let bm = stats[4u * b + 1u];
    let first = b * BLOCK + i * PER;
    var p = 0.0;
    for (var k = 0u; k < PER; k++) {
        p += weight(first + k, bm);
    }
    chunk[i] = p;
    workgroupBarrier();
    if (i == 0u) {
        let rest = sel_rest;
        var acc = 0.0;
        var token = NONE_TOKEN;
        var last_chunk = NONE_TOKEN;
        for (var j = 0u; j < WG; j++) {
            let c = chunk[j];
            if (c > 0.0) {
                last_chunk = j;
                if (acc + c > rest) {
                    var a = acc;
                    for (var k = 0u; k < PER; k++) {
                        let t = b * BLOCK + j * PER + k;
                        let w = weight(t, bm);
                        if (w > 0.0) {
                            token = t;
                            if (a + w > rest) {
                                break;
                            }
                            a += w;
                        }
                    }
                    break;
                }
                acc += c;
            }
        }
        if (token == NONE_TOKEN) {
            // Past the end by rounding: the last token of positive weight.
            for (var k = 0u; k < PER; k++) {
                let t = b * BLOCK + last_chunk * PER + k;
                if (weight(t, bm) > 0.0) {
                    token = t;
                }
            }
        }
        let lse_kept = g_kept + log(total_kept);
        let lse_all = g_all + log(total_all);
        result[0] = token;
        result[1] = bitcast<u32>(lse_kept - lse_all);
        result[2] = bitcast<u32>(lse_kept);
        result[3] = bitcast<u32>(lse_all);
        result[4] = bitcast<u32>(logits[params.offset + token]);
    }
}
