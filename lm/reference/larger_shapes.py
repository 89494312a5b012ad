"""A llama GGUF of a larger model's shapes, with SmolLM2's tokenizer and random weights.

Issue 33 asks for GPU figures on "one larger model of the same families". No such file can
be fetched here (no model hubs) or carried to a lent GPU machine (64 MiB a call), and a
forward pass's time depends on the shapes and types, not on the weights. This writes a
file of a preset's shapes: every block's matrices as Q4_1 blocks and the embedding (tied
to the output head) as Q8_0 blocks, drawn at random with finite scales, the norms as ones,
and SmolLM2's header for the rest (tokenizer, chat template, RoPE base). Greedy text from
it is gibberish. `same_shapes.py pack` then makes it small enough to carry, and
`same_shapes.py unpack` rebuilds it on the other side.

    python3 lm/reference/larger_shapes.py SmolLM2.gguf big.gguf [PRESET]

PRESET: `llama-1b` (Llama 3.2 1B's block shapes: 16 blocks of width 2048, 32 query and 8
key/value heads of 64, feed-forward 8192; 1.07 billion weights, about 713 MB) or
`llama-360m` (SmolLM2-360M's: 32 blocks of width 960, 15 and 5 heads of 64, feed-forward
2560; about 257 MB).
"""

import sys

import numpy as np

PRESETS = {
    "llama-1b": {"blocks": 16, "width": 2048, "heads": 32, "kv_heads": 8, "ff": 8192},
    "llama-360m": {"blocks": 32, "width": 960, "heads": 15, "kv_heads": 5, "ff": 2560},
}
HEAD = 64

# Keys the preset decides; every other key of the source's header is copied.
SHAPE_KEYS = {
    "llama.block_count",
    "llama.embedding_length",
    "llama.feed_forward_length",
    "llama.attention.head_count",
    "llama.attention.head_count_kv",
    "llama.rope.dimension_count",
    "general.file_type",
}


def q4_1(rows, cols, rng):
    """Random Q4_1 blocks of a rows × cols matrix: f16 scale d, f16 minimum m = -8d,
    16 bytes of nibbles; as the bytes of each row."""
    n = rows * cols // 32
    d = rng.uniform(0.002, 0.02, n).astype(np.float16)
    m = (-8.0 * d.astype(np.float32)).astype(np.float16)
    q = rng.integers(0, 256, (n, 16), dtype=np.uint8)
    blocks = np.concatenate([d.view(np.uint8).reshape(n, 2), m.view(np.uint8).reshape(n, 2), q], axis=1)
    return blocks.reshape(rows, cols // 32 * 20)


def q8_0(rows, cols, rng):
    """Random Q8_0 blocks: f16 scale d, 32 signed bytes."""
    n = rows * cols // 32
    d = rng.uniform(0.0002, 0.002, n).astype(np.float16)
    q = rng.integers(-127, 128, (n, 32), dtype=np.int8).view(np.uint8)
    blocks = np.concatenate([d.view(np.uint8).reshape(n, 2), q], axis=1)
    return blocks.reshape(rows, cols // 32 * 34)


def main():
    import gguf

    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    source, out = sys.argv[1], sys.argv[2]
    preset = sys.argv[3] if len(sys.argv) == 4 else "llama-1b"
    if preset not in PRESETS:
        sys.exit(f"unknown preset {preset!r}: one of {', '.join(PRESETS)}")
    p = PRESETS[preset]
    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"]
    if bytes(arch.parts[arch.data[0]]).decode() != "llama":
        sys.exit(f"{source}: not a llama file")
    vocab = int(reader.fields["llama.vocab_size"].parts[-1][0])

    writer = gguf.GGUFWriter(out, "llama")
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name in SHAPE_KEYS:
            continue
        kind = field.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            inner = field.types[-1]
            if inner == gguf.GGUFValueType.STRING:
                value = [bytes(field.parts[i]).decode("utf-8", "surrogateescape") for i in field.data]
            else:
                value = [field.parts[i][0].item() for i in field.data]
            writer.add_array(name, value)
        elif kind == gguf.GGUFValueType.STRING:
            writer.add_string(name, bytes(field.parts[field.data[0]]).decode("utf-8"))
        else:
            writer.add_key_value(name, field.parts[field.data[0]][0].item(), kind)
    width, kv = p["width"], p["kv_heads"] * HEAD
    writer.add_block_count(p["blocks"])
    writer.add_embedding_length(width)
    writer.add_feed_forward_length(p["ff"])
    writer.add_head_count(p["heads"])
    writer.add_head_count_kv(p["kv_heads"])
    writer.add_rope_dimension_count(HEAD)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_1)

    rng = np.random.default_rng(0)
    Q4_1, Q8_0, F32 = (gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0,
                       gguf.GGMLQuantizationType.F32)
    writer.add_tensor("token_embd.weight", q8_0(vocab, width, rng), raw_dtype=Q8_0)
    ones = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731
    for b in range(p["blocks"]):
        for name, rows, cols in [("attn_q", p["heads"] * HEAD, width), ("attn_k", kv, width),
                                 ("attn_v", kv, width), ("attn_output", width, p["heads"] * HEAD),
                                 ("ffn_gate", p["ff"], width), ("ffn_up", p["ff"], width),
                                 ("ffn_down", width, p["ff"])]:
            writer.add_tensor(f"blk.{b}.{name}.weight", q4_1(rows, cols, rng), raw_dtype=Q4_1)
        writer.add_tensor(f"blk.{b}.attn_norm.weight", ones(width), raw_dtype=F32)
        writer.add_tensor(f"blk.{b}.ffn_norm.weight", ones(width), raw_dtype=F32)
    writer.add_tensor("output_norm.weight", ones(width), raw_dtype=F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
