// Q4_K weights as the file stores them: 256-weight superblocks of 144 bytes = 36 words:
// word 0 = f16 d | f16 dmin; bytes 4..15 = twelve bytes packing eight 6-bit scales and
// mins; bytes 16..143 = nibbles. Sub-block j (32 weights; blk = 8 * superblock + j) takes
// the low (even j) or high (odd j) nibbles of bytes 32 * (j / 2) .. + 32;
// w = d * scale_j * q - dmin * min_j. Rows are nb / 8 superblocks.

fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let base = (row * (nb / 8u) + blk / 8u) * 36u;
    let j = blk % 8u;
    let dm = unpack2x16float(w[base]);
    let sm = k_scale_min(base + 1u, j);
    let d1 = dm.x * f32(sm.x);
    let m1 = dm.y * f32(sm.y);
    let shift = 4u * (j & 1u);
    let q0 = w[base + 4u + 8u * (j / 2u) + u];
    let q1 = w[base + 4u + 8u * (j / 2u) + 4u + u];
    var out: array<f32, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = d1 * f32((q0 >> (8u * i + shift)) & 15u) - m1;
        out[i + 4u] = d1 * f32((q1 >> (8u * i + shift)) & 15u) - m1;
    }
    return out;
}
