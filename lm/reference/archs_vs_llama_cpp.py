#!/usr/bin/env python3
"""Writes `architectures.json`, the llama.cpp reference `lm`'s qwen2, qwen3 and Llama 3 support
is tested against: for each tiny file `make_arch_models.py` writes,

  sha256     of the file (the test regenerates the files and checks it)
  plain      token ids of the strings of `make_reference.py` (special tokens not parsed)
             and a few more that tell the pre-tokenizers apart
  prompt     a prompt's ids as llama.cpp makes them for generation (BOS where the file,
             or its pre-tokenizer's default, asks for one)
  positions  top-20 next-token log-probabilities at every position of `prompt`

llama.cpp runs with an f32 KV cache and without flash attention, and the weights are F32,
so its arithmetic is f32 like ours: the log-probabilities agree to f32 rounding, not to
the 0.75 nats of the quantized SmolLM2 comparison.

    python3 -m pip install llama-cpp-python==0.3.36 gguf==0.19.0
    python3 lm/reference/archs_vs_llama_cpp.py
"""

import hashlib
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
from llama_cpp import Llama

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_reference import STRINGS, top_logprobs  # noqa: E402

MORE_STRINGS = [
    "12345678901234567890 and 3.14159265",
    "Hello\n\n\nworld\r\n  indented\n\tTabbed",
    "It'S wE'rE tHEY'Ve I'M yOu'LL",
    "a  b   c    d     e",
    "¡Hola! ¿Qué tal? — «bien»",
    "   \n   ",
]
PROMPT = "The quick brown fox jumps over the lazy dog. 1234567 it's"
FILES = ["tiny-qwen2.gguf", "tiny-llama3.gguf", "tiny-qwen3.gguf"]


def main():
    out = {"llama_cpp_python": __import__("llama_cpp").__version__, "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(HERE / "make_arch_models.py"), tmp], check=True)
        for name in FILES:
            path = pathlib.Path(tmp) / name
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            llm = Llama(model_path=str(path), n_ctx=256, n_threads=2, n_batch=256,
                        logits_all=True, verbose=False, seed=0, type_k=0, type_v=0,
                        flash_attn=False)
            tok = lambda text, bos=False: llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False)
            plain = [{"text": s, "ids": tok(s)} for s in STRINGS + MORE_STRINGS]
            # add_bos=True asks llama.cpp to add BOS only where the vocabulary says so.
            prompt = tok(PROMPT, True)
            llm.reset()
            llm.eval(prompt)
            positions = [top_logprobs(llm.scores[i]) for i in range(len(prompt))]
            out["models"][name] = {"sha256": sha, "plain": plain,
                                   "prompt": {"text": PROMPT, "ids": prompt},
                                   "positions": positions}
            print(name, "prompt", prompt)
    with open(HERE / "architectures.json", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote architectures.json")


if __name__ == "__main__":
    main()
