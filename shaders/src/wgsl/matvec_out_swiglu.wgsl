// Gate and up stacked (dims.rows = 2 * d_ff: the gate's rows, then up's): each workgroup
// computes gate row g and up row d_ff + g and writes silu(gate) * up to `out` at token t.
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const ROWS: u32 = 2u;

fn rows_of(g: u32) -> vec2<u32> {
    return vec2<u32>(g, dims.rows / 2u + g);
}

fn put(t: u32, g: u32, gate: f32, up: f32) {
    out[t * (dims.rows / 2u) + g] = gate / (1.0 + exp(-gate)) * up;
}
