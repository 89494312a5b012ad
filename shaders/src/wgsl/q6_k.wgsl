// Q6_K weights as the file stores them: 256-weight superblocks of 210 bytes: ql[128]
// (low nibbles), qh[64] (2-bit highs), sixteen i8 scales, f16 d at byte 208; indexed by
// byte inside the u32 array (superblocks start at even offsets: a 4-byte read is one word
// or two halves). Sub-block j (32 weights) lies in half n = j / 4 at quarter k = j % 4:
// weight l takes the nibble (k / 2) of ql[64n + 32(k % 2) + l], bits 2k..2k+1 of
// qh[32n + l], and scale sc[8n + 2k + l / 16]; w = d * sc * (q - 32).

fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let a = (row * (nb / 8u) + blk / 8u) * 210u;
    let j = blk % 8u;
    let n = j / 4u;
    let k = j % 4u;
    let d = unpack2x16float(word_at(a + 208u)).x;
    let ql = a + 64u * n + 32u * (k & 1u) + 4u * u;
    let qh = a + 128u + 32u * n + 4u * u;
    let sc = a + 192u + 8u * n + 2u * k;
    let s0 = d * f32(extractBits(i32(byte_at(sc)), 0u, 8u));
    let s1 = d * f32(extractBits(i32(byte_at(sc + 1u)), 0u, 8u));
    let l0 = word_at(ql);
    let l1 = word_at(ql + 16u);
    let h0 = word_at(qh);
    let h1 = word_at(qh + 16u);
    let nib = 4u * (k >> 1u);
    var out: array<f32, 8>;
    for (var i = 0u; i < 4u; i++) {
        let q0 = ((l0 >> (8u * i + nib)) & 15u) | (((h0 >> (8u * i + 2u * k)) & 3u) << 4u);
        let q1 = ((l1 >> (8u * i + nib)) & 15u) | (((h1 >> (8u * i + 2u * k)) & 3u) << 4u);
        out[i] = s0 * f32(i32(q0) - 32);
        out[i + 4u] = s1 * f32(i32(q1) - 32);
    }
    return out;
}
