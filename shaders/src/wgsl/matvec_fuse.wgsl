// The parameters of a fused matvec's norm (eps) and RoPE (head width, rotated dimensions,
// pairing: 0 = adjacent pairs, 1 = halves).
struct Fuse {
    eps: f32,
    head_dim: u32,
    n_rot: u32,
    halves: u32,
}

@group(0) @binding(8) var<uniform> fuse: Fuse;
