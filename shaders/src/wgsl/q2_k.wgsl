// Q2_K weights as the file stores them: 256-weight superblocks of 84 bytes = 21 words:
// bytes 0..15 = sixteen scale bytes (low nibble: scale, high nibble: min), bytes 16..79 =
// 2-bit codes, word 20 = f16 d | f16 dmin. Sub-block j (32 weights) lies in half n = j / 4
// at shift 2 (j % 4): weights 0..15 take bits of bytes 16 + 32n + l with scale byte
// 8n + 2(j % 4), weights 16..31 those of bytes 16 + 32n + 16 + l with the next scale
// byte; w = d * scale * q - dmin * min.
fn k2_byte(base: u32, i: u32) -> u32 {
    return (w[base + (i >> 2u)] >> (8u * (i & 3u))) & 255u;
}

fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let base = (row * (nb / 8u) + blk / 8u) * 21u;
    let j = blk % 8u;
    let n = j / 4u;
    let s = j % 4u;
    let dm = unpack2x16float(w[base + 20u]);
    let sc0 = k2_byte(base, 8u * n + 2u * s);
    let sc1 = k2_byte(base, 8u * n + 2u * s + 1u);
    let d0 = dm.x * f32(sc0 & 15u);
    let m0 = dm.y * f32(sc0 >> 4u);
    let d1 = dm.x * f32(sc1 & 15u);
    let m1 = dm.y * f32(sc1 >> 4u);
    let q0 = w[base + 4u + 8u * n + u];
    let q1 = w[base + 8u + 8u * n + u];
    var out: array<f32, 8>;
    for (var i = 0u; i < 4u; i++) {
        out[i] = d0 * f32((q0 >> (8u * i + 2u * s)) & 3u) - m0;
        out[i + 4u] = d1 * f32((q1 >> (8u * i + 2u * s)) & 3u) - m1;
    }
    return out;
}
