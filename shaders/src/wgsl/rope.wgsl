// RoPE in place: in each head, pair i of row r turns by the angle of token t's position
// pos_of(t), with cos/sin from a table computed on the CPU
// (table[pos * n_rot + 2i] = cos, [.. + 2i + 1] = sin). The pair is (2i, 2i+1) (llama.cpp's
// normal mode), or (i, i + n_rot/2) when mode bit 2 is set (its neox mode). Row r = t, or
// cache_row(t) when mode bit 1 is set (rows of the KV cache).
// Invocation (x: pair over all heads, y: token).
struct Dims {
    width: u32,
    head_dim: u32,
    n_rot: u32,
    mode: u32,
}

@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@group(0) @binding(1) var<storage, read> table: array<f32>;
@group(0) @binding(2) var<uniform> dims: Dims;
@group(0) @binding(3) var<uniform> step: Step;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.y;
    let half = dims.n_rot / 2u;
    let heads = dims.width / dims.head_dim;
    if (t >= step.n || gid.x >= heads * half) {
        return;
    }
    let head = gid.x / half;
    let i = gid.x % half;
    let pos = pos_of(t);
    let row = select(t, cache_row(t), (dims.mode & 1u) != 0u);
    let c = table[pos * dims.n_rot + 2u * i];
    let s = table[pos * dims.n_rot + 2u * i + 1u];
    let base = row * dims.width + head * dims.head_dim;
    let halves = (dims.mode & 2u) != 0u;
    let ia = base + select(2u * i, i, halves);
    let ib = base + select(2u * i + 1u, i + half, halves);
    let a = v[ia];
    let b = v[ib];
    v[ia] = a * c - b * s;
    v[ib] = a * s + b * c;
}
