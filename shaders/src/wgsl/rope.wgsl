// RoPE in llama.cpp's normal mode, in place: in each head, pair (2i, 2i+1) of row r turns
// by the angle of position step.n_past + t, with cos/sin from a table computed on the CPU
// (table[pos * n_rot + 2i] = cos, [.. + 2i + 1] = sin). Row r = t, or step.n_past + t
// when mode = 1 (rows of the KV cache). Invocation (x: pair over all heads, y: token).
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
    let pos = step.n_past + t;
    let row = select(t, step.n_past + t, dims.mode == 1u);
    let c = table[pos * dims.n_rot + 2u * i];
    let s = table[pos * dims.n_rot + 2u * i + 1u];
    let o = row * dims.width + head * dims.head_dim + 2u * i;
    let a = v[o];
    let b = v[o + 1u];
    v[o] = a * c - b * s;
    v[o + 1u] = a * s + b * c;
}
