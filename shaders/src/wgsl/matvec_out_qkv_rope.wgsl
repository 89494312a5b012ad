// Stacked q, k and v (as matvec_out_qkv.wgsl) with the bias and RoPE applied on the way
// out: each workgroup computes two rows, the pair RoPE turns together (adjacent rows, or
// i and i + n_rot/2 in a head when fuse.halves = 1; the unrotated rest of a head and v's
// rows in adjacent pairs), adds their biases, turns them by the angle of position
// pos_of(t) (table[pos * n_rot + 2i] = cos, + 1 = sin, as rope.wgsl) and stores
// them: q to `out`, k and v into the caches (matvec_store_qkv.wgsl).
@group(0) @binding(9) var<storage, read> rope_table: array<f32>;
@group(0) @binding(10) var<storage, read> bias: array<f32>;

const ROWS: u32 = 2u;

// The pair's index among its head's pairs (rotated ones first), or head_dim for v's rows.
fn pair_in_head(g: u32) -> u32 {
    let nq = dims.extra;
    let kv = (dims.rows - nq) / 2u;
    let hh = fuse.head_dim / 2u;
    if (g < nq / 2u) {
        return g % hh;
    }
    if (g < (nq + kv) / 2u) {
        return (g - nq / 2u) % hh;
    }
    return fuse.head_dim;
}

fn rows_of(g: u32) -> vec2<u32> {
    let j = pair_in_head(g);
    if (j == fuse.head_dim) {
        return vec2<u32>(2u * g, 2u * g + 1u);
    }
    // The head's first row: pairs before it fill heads of head_dim rows.
    let hh = fuse.head_dim / 2u;
    let hb = 2u * (g - j);
    let half = fuse.n_rot / 2u;
    if (j < half) {
        if (fuse.halves != 0u) {
            return vec2<u32>(hb + j, hb + j + half);
        }
        return vec2<u32>(hb + 2u * j, hb + 2u * j + 1u);
    }
    let e = fuse.n_rot + 2u * (j - half);
    return vec2<u32>(hb + e, hb + e + 1u);
}

fn put(t: u32, g: u32, v0: f32, v1: f32) {
    let r = rows_of(g);
    var a = v0 + bias[r.x];
    var b = v1 + bias[r.y];
    let j = pair_in_head(g);
    if (j < fuse.n_rot / 2u) {
        let at = pos_of(t) * fuse.n_rot + 2u * j;
        let c = rope_table[at];
        let s = rope_table[at + 1u];
        let a0 = a;
        a = a0 * c - b * s;
        b = a0 * s + b * c;
    }
    store_qkv(t, r.x, a);
    store_qkv(t, r.y, b);
}
