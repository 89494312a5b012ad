#!/usr/bin/env python3
"""Writes tiny random-weight GGUF files of the architectures `lm` runs besides SmolLM2's,
with the `gguf` PyPI package's writer (not ours):

  tiny-qwen2.gguf   qwen2: biases on q, k and v; RoPE over head halves; tied output;
                    linear RoPE scaling (factor 2); the `qwen2` pre-tokenizer
  tiny-llama3.gguf  llama: Llama 3's `rope_freqs.weight` frequency factors; untied
                    output; the `llama-bpe` pre-tokenizer (merges ignored for whole
                    words, BOS added by default: the file does not say)
  tiny-qwen3.gguf   qwen3: RMSNorm of each q and k head before RoPE (halves), heads
                    wider than d_model / heads (q is 128 wide, the model 64), tied output

Both borrow SmolLM2's vocabulary and merges (49 152 tokens; no hub is reachable here to
fetch Qwen's or Llama's), so each file's tokenizer is that vocabulary under the other
architecture's pre-tokenizer: what llama.cpp and `lm` must agree on. Weights are F32 and
drawn from a counter-based generator written below (splitmix64), so the bytes do not
depend on numpy's random streams; `lm/reference/architectures.json` records each file's
sha256, and the test that reads the files checks it.

    python3 lm/reference/make_arch_models.py OUT_DIR [SMOLLM2.gguf]

`lm/reference/archs_vs_llama_cpp.py` runs llama.cpp on these files and writes the
reference; `cargo test -p lm --test llama_cpp_reference` runs this script when a file
is missing or differs from the one the reference was made from.
"""

import pathlib
import sys

import numpy as np
import gguf

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_SOURCE = ROOT / "assets/models/SmolLM2-135M-Instruct.Q4_1.gguf"

D, HEADS, KV_HEADS, FF, LAYERS = 64, 4, 2, 128, 2
HEAD_DIM = D // HEADS


def uniform(seed: int, shape) -> np.ndarray:
    """Deterministic floats in [-1, 1): splitmix64 of (seed, index)."""
    n = int(np.prod(shape))
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return ((z >> np.uint64(40)).astype(np.float64) / float(1 << 23) - 1.0).reshape(shape).astype(np.float32)


def vocabulary(source: pathlib.Path):
    r = gguf.GGUFReader(str(source))
    f = lambda k: r.fields[k].contents()
    return f("tokenizer.ggml.tokens"), f("tokenizer.ggml.token_type"), f("tokenizer.ggml.merges")


def write(path: pathlib.Path, arch: str, pre: str, seed: int, vocab, *, biases: bool,
          tied: bool, rope_base: float, rope_factors=None, linear_scale=None, add_bos=None,
          head_dim=HEAD_DIM, qk_norm=False):
    tokens, types, merges = vocab
    n_vocab = len(tokens)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"tiny random {arch}")
    w.add_context_length(256)
    w.add_embedding_length(D)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(head_dim)
    if head_dim != HEAD_DIM:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_rope_freq_base(rope_base)
    w.add_layer_norm_rms_eps(1e-6)
    if linear_scale is not None:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(linear_scale)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    if add_bos is not None:
        w.add_add_bos_token(add_bos)

    counter = [seed * 1000]

    def t(name, shape, scale, offset=0.0):
        counter[0] += 1
        w.add_tensor(name, (offset + scale * uniform(counter[0], shape)).astype(np.float32))

    # numpy shapes are (rows, cols): GGUF dims [cols, rows].
    t("token_embd.weight", (n_vocab, D), 1.7)
    for l in range(LAYERS):
        p = f"blk.{l}."
        t(p + "attn_norm.weight", (D,), 0.2, 1.0)
        q_dim, kv_dim = HEADS * head_dim, KV_HEADS * head_dim
        t(p + "attn_q.weight", (q_dim, D), 3.0 / np.sqrt(D))
        t(p + "attn_k.weight", (kv_dim, D), 3.0 / np.sqrt(D))
        t(p + "attn_v.weight", (kv_dim, D), 1.7 / np.sqrt(D))
        if biases:
            t(p + "attn_q.bias", (q_dim,), 1.0)
            t(p + "attn_k.bias", (kv_dim,), 1.0)
            t(p + "attn_v.bias", (kv_dim,), 1.0)
        if qk_norm:
            # After the per-head norm q and k have unit RMS: larger gains keep the
            # attention scores far from uniform.
            t(p + "attn_q_norm.weight", (head_dim,), 0.5, 2.0)
            t(p + "attn_k_norm.weight", (head_dim,), 0.5, 2.0)
        t(p + "attn_output.weight", (D, q_dim), 1.7 / np.sqrt(q_dim))
        t(p + "ffn_norm.weight", (D,), 0.2, 1.0)
        t(p + "ffn_gate.weight", (FF, D), 1.7 / np.sqrt(D))
        t(p + "ffn_up.weight", (FF, D), 1.7 / np.sqrt(D))
        t(p + "ffn_down.weight", (D, FF), 1.7 / np.sqrt(FF))
    t("output_norm.weight", (D,), 0.2, 1.0)
    if not tied:
        t("output.weight", (n_vocab, D), 6.0 / np.sqrt(D))
    if rope_factors is not None:
        w.add_tensor("rope_freqs.weight", np.asarray(rope_factors, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def llama3_factors(base: float, n_rot: int, factor=8.0, low=1.0, high=4.0, original=8192):
    """Llama 3.1's frequency factors, as its GGUF converter computes them."""
    out = []
    low_wavelen, high_wavelen = original / low, original / high
    for i in range(0, n_rot, 2):
        freq = 1.0 / base ** (i / n_rot)
        wavelen = 2 * np.pi / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (original / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return out


def main():
    out = pathlib.Path(sys.argv[1])
    source = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_SOURCE
    out.mkdir(parents=True, exist_ok=True)
    vocab = vocabulary(source)
    # Llama 3.1's formula at this head width: a small base and original context make
    # the 8 factors span 1..8 (1, 1, 1.05, 1.93, 3.95, 8, 8, 8).
    write(out / "tiny-qwen2.gguf.part", "qwen2", "qwen2", 1, vocab, biases=True, tied=True,
          rope_base=1e6, linear_scale=2.0, add_bos=False)
    write(out / "tiny-llama3.gguf.part", "llama", "llama-bpe", 2, vocab, biases=False,
          tied=False, rope_base=50.0, rope_factors=llama3_factors(50.0, HEAD_DIM, original=64))
    write(out / "tiny-qwen3.gguf.part", "qwen3", "qwen2", 3, vocab, biases=False, tied=True,
          rope_base=1e6, head_dim=32, qk_norm=True)
    for name in ["tiny-qwen2.gguf", "tiny-llama3.gguf", "tiny-qwen3.gguf"]:
        (out / (name + ".part")).rename(out / name)
        print("wrote", out / name)


if __name__ == "__main__":
    main()
