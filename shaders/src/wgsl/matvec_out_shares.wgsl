// Where a matvec result goes when the block's output product was folded into attention
// (attention_out_shares.wgsl): row `g` of token `t` accumulated into `out` (the residual)
// with the dims.extra heads' shares of that row, so that down's dispatch also adds the
// output product to the residual: out += W x + Σ_h shares[(t · extra + h) · rows + g].
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(11) var<storage, read> shares: array<f32>;

const ROWS: u32 = 1u;

fn rows_of(g: u32) -> vec2<u32> {
    return vec2<u32>(g, g);
}

fn put(t: u32, g: u32, v: f32, unused: f32) {
    var sum = v;
    for (var h = 0u; h < dims.extra; h++) {
        sum += shares[(t * dims.extra + h) * dims.rows + g];
    }
    out[t * dims.rows + g] += sum;
}
