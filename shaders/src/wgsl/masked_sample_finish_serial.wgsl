// Masked sampling, pass 2 of 2, for CPU adapters: one invocation combines the block
// statistics (log-sum-exp of all and of the kept logits) and draws the kept token at the
// inverse CDF of the masked softmax at u — the block from the block sums, then the token
// by a scan of the block. Rounding can leave u * total past the last cumulative sum: then
// the last token of positive weight is drawn. Same result layout as the workgroup variant:
// (token or NONE_TOKEN, log Z, log-sum-exp kept, log-sum-exp all).
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

const BLOCK: u32 = 256u;
const NONE: f32 = -3.0e38;
const NONE_TOKEN: u32 = 0xFFFFFFFFu;

fn kept(t: u32) -> bool {
    return ((mask[t >> 5u] >> (t & 31u)) & 1u) != 0u;
}

@compute @workgroup_size(1)
fn main() {
    let nb = params.blocks;
    var g_all = NONE;
    var g_kept = NONE;
    for (var b = 0u; b < nb; b++) {
        g_all = max(g_all, stats[4u * b]);
        g_kept = max(g_kept, stats[4u * b + 1u]);
    }
    var total_all = 0.0;
    var total_kept = 0.0;
    for (var b = 0u; b < nb; b++) {
        total_all += stats[4u * b + 2u] * exp(stats[4u * b] - g_all);
        if (stats[4u * b + 1u] > NONE) {
            total_kept += stats[4u * b + 3u] * exp(stats[4u * b + 1u] - g_kept);
        }
    }
    let lse_all = g_all + log(total_all);
    if (!(g_kept > NONE && total_kept > 0.0)) {
        result[0] = NONE_TOKEN;
        result[1] = 0u;
        result[2] = 0u;
        result[3] = bitcast<u32>(lse_all);
        return;
    }
    // The block, then the token (weights in the block's own scale, as its sum).
    let goal = params.u * total_kept;
    var acc = 0.0;
    var sel = NONE_TOKEN;
    var last = NONE_TOKEN;
    var rest = 3.0e38;
    for (var b = 0u; b < nb; b++) {
        let bm = stats[4u * b + 1u];
        if (bm > NONE) {
            let c = stats[4u * b + 3u] * exp(bm - g_kept);
            if (c > 0.0) {
                last = b;
                if (acc + c > goal) {
                    sel = b;
                    rest = (goal - acc) / exp(bm - g_kept);
                    break;
                }
                acc += c;
            }
        }
    }
    if (sel == NONE_TOKEN) {
        sel = last;
    }
    let bm = stats[4u * sel + 1u];
    var token = NONE_TOKEN;
    var a = 0.0;
    let end = min((sel + 1u) * BLOCK, params.vocab);
    for (var t = sel * BLOCK; t < end; t++) {
        if (kept(t)) {
            let w = exp(logits[params.offset + t] - bm);
            if (w > 0.0) {
                token = t;
                if (a + w > rest) {
                    break;
                }
                a += w;
            }
        }
    }
    let lse_kept = g_kept + log(total_kept);
    result[0] = token;
    result[1] = bitcast<u32>(lse_kept - lse_all);
    result[2] = bitcast<u32>(lse_kept);
    result[3] = bitcast<u32>(lse_all);
    result[4] = bitcast<u32>(logits[params.offset + token]);
}
