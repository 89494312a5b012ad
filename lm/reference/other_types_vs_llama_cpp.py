#!/usr/bin/env python3
"""Requantizes the SmolLM2 GGUF into every tensor type llama.cpp's quantizer makes and
compares, on each file, our token log-probabilities (`strait score`) with llama.cpp's
and our tokenization with llama.cpp's. A check run by hand (it needs llama-cpp-python,
which `cargo xtask bench decode` installs); the files go to a temporary directory.

    cargo build --release --bin strait
    python3 lm/reference/other_types_vs_llama_cpp.py [MODEL.gguf]

llama.cpp quantizes activations to 8 bits for quantized matrices, so on quantized files
its log-probabilities differ from exact arithmetic (ours: f32 activations, matched to a
float64 forward pass in `llama_cpp_reference.rs`) by up to about 0.45 nats a token here;
on the Q8_0 file, whose weights are the original's to within Q8_0 rounding, llama.cpp
moves 0.69 nats over the 7 tokens from its own F16 result and we move 0.09. The F16
file agrees to 0.005 nats a token, BF16 (activations rounded to bfloat16 there) to 0.04.
"""

import ctypes
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import llama_cpp

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "assets/models/SmolLM2-135M-Instruct.Q4_1.gguf"
STRAIT = ROOT / "target/release/strait"
# llama.cpp's `llama_ftype` values.
FTYPES = {"Q4_0": 2, "Q5_0": 8, "Q5_1": 9, "Q8_0": 7, "Q2_K": 10, "Q3_K_M": 12,
          "Q4_K_M": 15, "Q5_K_M": 17, "Q6_K": 18, "F16": 1, "BF16": 32}
PROMPT, TEXT = "The capital of France is", " Paris, a city of light."


def log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, ftype in FTYPES.items():
            path = pathlib.Path(tmp) / f"{name}.gguf"
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype, params.allow_requantize, params.nthread = ftype, True, 1
            if llama_cpp.llama_model_quantize(str(SOURCE).encode(), str(path).encode(), ctypes.byref(params)) != 0:
                print(f"{name}: llama.cpp could not quantize"); continue
            out = subprocess.run([str(STRAIT), "score", "--model", str(path), "--prompt", PROMPT, "--text", TEXT],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{name}: strait failed: {out.stderr.strip().splitlines()[-1]}"); continue
            ours = json.loads(out.stdout.strip().splitlines()[-1])
            llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, logits_all=True, verbose=False)
            prompt = llm.tokenize(PROMPT.encode(), add_bos=False, special=True)
            tokens = ours["tokens"]
            llm.eval(prompt + tokens)
            lp = log_softmax(np.array(llm.scores[: len(prompt) + len(tokens)], dtype=np.float64))
            theirs = np.array([lp[len(prompt) - 1 + i, t] for i, t in enumerate(tokens)])
            mine = np.array(ours["token_logps"][: len(tokens)])
            same = llm.tokenize(TEXT.encode(), add_bos=False, special=False) == tokens
            print(f"{name:7s} tokens equal: {same}  max |Δ log p| {np.abs(mine - theirs).max():.4f} nats"
                  f"  Σ log p: ours {mine.sum():.3f}, llama.cpp {theirs.sum():.3f}")


if __name__ == "__main__":
    main()
