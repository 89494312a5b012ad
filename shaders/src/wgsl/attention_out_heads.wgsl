// Where attention.wgsl puts each head's result: `out`, n × n_heads·head_dim (the output
// product then runs as a dispatch of its own).
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

fn put_head(qb: u32, i: u32, v: f32) {
    out[qb + i] = v;
}

fn end_head(h: u32, t: u32, lid: u32) {}
