// Q3_K weights as the file stores them: 256-weight superblocks of 110 bytes: hmask[32]
// (bit 4n + s of hmask[l]: the high bit, set meaning "no -4"), 2-bit codes in bytes
// 32..95, twelve bytes packing sixteen 6-bit scales at 96..107, f16 d at 108; indexed by
// byte inside the u32 array (superblocks start at even offsets: a 4-byte read is one word
// or two halves). Sub-block j lies in half n = j / 4 at shift 2s, s = j % 4: weights
// 0..15 take codes of bytes 32 + 32n + l, weights 16..31 those of the next 16 bytes, with
// scales 8n + 2s and 8n + 2s + 1; w = d * (scale - 32) * (code - (high bit ? 0 : 4)).

// Scale i (0..16) of the block at byte a, minus 32.
fn k3_scale(a: u32, i: u32) -> i32 {
    var low: u32;
    if (i < 8u) {
        low = byte_at(a + 96u + i) & 15u;
    } else {
        low = byte_at(a + 96u + i - 8u) >> 4u;
    }
    let high = (byte_at(a + 104u + i % 4u) >> (2u * (i / 4u))) & 3u;
    return i32(low | (high << 4u)) - 32;
}

fn load8(row: u32, nb: u32, blk: u32, u: u32) -> array<f32, 8> {
    let a = (row * (nb / 8u) + blk / 8u) * 110u;
    let j = blk % 8u;
    let n = j / 4u;
    let s = j % 4u;
    let d = unpack2x16float(word_at(a + 108u)).x;
    let d0 = d * f32(k3_scale(a, 8u * n + 2u * s));
    let d1 = d * f32(k3_scale(a, 8u * n + 2u * s + 1u));
    let q0 = word_at(a + 32u + 32u * n + 4u * u);
    let q1 = word_at(a + 48u + 32u * n + 4u * u);
    let h0 = word_at(a + 4u * u);
    let h1 = word_at(a + 16u + 4u * u);
    let bit = 4u * n + s;
    var out: array<f32, 8>;
    for (var i = 0u; i < 4u; i++) {
        let c0 = i32((q0 >> (8u * i + 2u * s)) & 3u) - select(4, 0, ((h0 >> (8u * i + bit)) & 1u) != 0u);
        let c1 = i32((q1 >> (8u * i + 2u * s)) & 3u) - select(4, 0, ((h1 >> (8u * i + bit)) & 1u) != 0u);
        out[i] = d0 * f32(c0);
        out[i + 4u] = d1 * f32(c1);
    }
    return out;
}
