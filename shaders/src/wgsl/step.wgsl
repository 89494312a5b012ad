// Per-run values shared by every kernel of a forward step.
struct Step {
    // Tokens in this run.
    n: u32,
    // Positions already in the KV cache (of a one-sequence run; kernels read `at`).
    n_past: u32,
    // First token whose logits are wanted (the output head starts there).
    first: u32,
    pad: u32,
    // Token t's place: x = its position in its sequence, y = the cache row of that
    // sequence's position 0 (several sequences can share a cache, side by side).
    at: array<vec4<u32>, 64>,
}

// Token t's position in its sequence.
fn pos_of(t: u32) -> u32 {
    return step.at[t].x;
}

// The cache row of token t's keys and values.
fn cache_row(t: u32) -> u32 {
    return step.at[t].y + step.at[t].x;
}
