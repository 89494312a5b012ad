// The input's values that meet one `load8` unit starting at float `xb` of x (token
// xb / cols), each plus the dims.extra shares the attention's heads wrote for that token
// (attention_out_shares.wgsl: shares[(t · extra + h) · cols + c]): the residual after the
// output product, which the shares make without a dispatch of their own.
@group(0) @binding(11) var<storage, read> shares: array<f32>;

fn x8(xb: u32) -> array<f32, 8> {
    let t = xb / dims.cols;
    let c = xb % dims.cols;
    var v = array<f32, 8>(
        x[xb], x[xb + 1u], x[xb + 2u], x[xb + 3u],
        x[xb + 16u], x[xb + 17u], x[xb + 18u], x[xb + 19u],
    );
    for (var h = 0u; h < dims.extra; h++) {
        let s = (t * dims.extra + h) * dims.cols + c;
        v[0] += shares[s];
        v[1] += shares[s + 1u];
        v[2] += shares[s + 2u];
        v[3] += shares[s + 3u];
        v[4] += shares[s + 16u];
        v[5] += shares[s + 17u];
        v[6] += shares[s + 18u];
        v[7] += shares[s + 19u];
    }
    return v;
}
