// mask[w] = OR over edges e with flags[e] != 0 of bf[e * W + w]: one invocation per
// output word (32 tokens). dims = (E, W).
@group(0) @binding(0) var<storage, read> flags: array<u32>;
@group(0) @binding(1) var<storage, read> bf: array<u32>;
@group(0) @binding(2) var<storage, read_write> mask: array<u32>;
@group(0) @binding(3) var<uniform> dims: vec4<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = gid.y * nwg.x * 64u + gid.x;
    let n_edges = dims.x;
    let words = dims.y;
    if (w >= words) {
        return;
    }
    var m = 0u;
    for (var e = 0u; e < n_edges; e++) {
        if (flags[e] != 0u) {
            m |= bf[e * words + w];
        }
    }
    mask[w] = m;
}
