// Scale and min j (0..8) of a Q4_K/Q5_K superblock whose twelve packed scale bytes start
// at word `s` (ggml's get_scale_min_k4): six bits each.
fn k_byte(s: u32, i: u32) -> u32 {
    return (w[s + (i >> 2u)] >> (8u * (i & 3u))) & 255u;
}

fn k_scale_min(s: u32, j: u32) -> vec2<u32> {
    if (j < 4u) {
        return vec2<u32>(k_byte(s, j) & 63u, k_byte(s, j + 4u) & 63u);
    }
    return vec2<u32>(
        (k_byte(s, j + 4u) & 15u) | ((k_byte(s, j - 4u) >> 6u) << 4u),
        (k_byte(s, j + 4u) >> 4u) | ((k_byte(s, j) >> 6u) << 4u),
    );
}
