// Q5_K weights as the file stores them: 256-weight superblocks of 176 bytes = 44 words:
// word 0 = f16 d | f16 dmin; bytes 4..15 = packed 6-bit scales and mins (as Q4_K);
// bytes 16..47 = qh; bytes 48..175 = nibbles. Sub-block j takes the low (even j) or high
// (odd j) nibbles of bytes 48 + 32 * (j / 2) .. + 32, with bit j of qh[l] as the fifth
// bit of its weight l; w = d * scale_j * q - dmin * min_j.

fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let base = (row * (nb / 8u) + blk / 8u) * 44u;
    let j = blk % 8u;
    let dm = unpack2x16float(w[base]);
    let sm = k_scale_min(base + 1u, j);
    let d1 = dm.x * f32(sm.x);
    let m1 = dm.y * f32(sm.y);
    let shift = 4u * (j & 1u);
    let q0 = w[base + 12u + 8u * (j / 2u) + u];
    let q1 = w[base + 12u + 8u * (j / 2u) + 4u + u];
    let h0 = w[base + 4u + u];
    let h1 = w[base + 8u + u];
    var out: array<f32, 8>;
    for (var i = 0u; i < 4u; i++) {
        let lo = ((q0 >> (8u * i + shift)) & 15u) | (((h0 >> (8u * i + j)) & 1u) << 4u);
        let hi = ((q1 >> (8u * i + shift)) & 15u) | (((h1 >> (8u * i + j)) & 1u) << 4u);
        out[i] = d1 * f32(lo) - m1;
        out[i + 4u] = d1 * f32(hi) - m1;
    }
    return out;
}
