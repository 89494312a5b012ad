// Per-run values shared by every kernel of a forward step.
struct Step {
    // Tokens in this run.
    n: u32,
    // Positions already in the KV cache.
    n_past: u32,
    // First token whose logits are wanted (the output head starts there).
    first: u32,
    pad: u32,
}
