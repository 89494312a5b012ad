// Where attention.wgsl puts each head's result when it also does the output product: the
// head's head_dim values stay in workgroup memory, and the workgroup multiplies them by the
// head's columns of the output matrix `w` (rows dims.out_rows, columns n_heads·head_dim,
// quantized: the format's `load8`, one 32-column block at a time). Head h of token t
// writes its share of the product to shares[(t · n_heads + h) · out_rows ..]: the heads'
// shares summed are the output product, which the next product adds as it reads its
// input (matvec_x_shares.wgsl) and down adds to the residual (matvec_out_shares.wgsl).
// No float atomics in WGSL: summing the shares in a later dispatch keeps it deterministic.
@group(0) @binding(4) var<storage, read_write> shares: array<f32>;
@group(0) @binding(7) var<storage, read> w: array<u32>;

// One head's result (head_dim at most 256: Attention::folds_heads).
var<workgroup> head_out: array<f32, 256>;

fn put_head(qb: u32, i: u32, v: f32) {
    head_out[i] = v;
}

fn end_head(h: u32, t: u32, lid: u32) {
    let hd = dims.head_dim;
    let nb = dims.n_heads * hd / 32u;
    let blk0 = h * hd / 32u;
    let sb = (t * dims.n_heads + h) * dims.out_rows;
    for (var r = lid; r < dims.out_rows; r += 64u) {
        var s0 = 0.0;
        var s1 = 0.0;
        for (var b = 0u; b < hd / 32u; b++) {
            for (var u = 0u; u < 4u; u++) {
                let wv = load8(r, nb, blk0 + b, u);
                let c = b * 32u + 4u * u;
                s0 += wv[0] * head_out[c] + wv[1] * head_out[c + 1u]
                    + wv[2] * head_out[c + 2u] + wv[3] * head_out[c + 3u];
                s1 += wv[4] * head_out[c + 16u] + wv[5] * head_out[c + 17u]
                    + wv[6] * head_out[c + 18u] + wv[7] * head_out[c + 19u];
            }
        }
        shares[sb + r] = s0 + s1;
    }
}
