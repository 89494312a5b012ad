"""Strait's samplers over a model run by another library: llama-cpp-python loads the
SmolLM2 GGUF, `strait.FunctionModel` samples from it (token masking, and exact CARS), and
the same job runs on Strait's own engine for comparison: time per sample, side by side.

    python3 -m venv /tmp/llamaenv && /tmp/llamaenv/bin/pip install numpy llama-cpp-python
    pip install ./py
    PYTHONPATH=/tmp/llamaenv/lib/python3.11/site-packages python3 py/examples/llama_cpp_function_model.py

llama.cpp computes with 8-bit activations, so its log-probabilities differ slightly from
Strait's engine (up to about 0.5 nats a sequence): the two draw from slightly different
models, and their samples may differ at one seed.
"""

import argparse
import os
import time

import jinja2
import numpy as np
from llama_cpp import Llama

import strait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "assets/models/SmolLM2-135M-Instruct.Q4_1.gguf")
PROMPT = open(os.path.join(ROOT, "assets/examples/date.prompt.txt")).read()
REGEX = open(os.path.join(ROOT, "assets/examples/date.regex")).read().strip()


class LlamaCppLogprobs:
    """Next-token log-probabilities from llama.cpp after the prompt and each prefix, reusing
    llama.cpp's KV cache for the part a prefix shares with the last one."""

    def __init__(self, path, prompt, threads):
        self.llm = Llama(model_path=path, n_ctx=256, logits_all=True, verbose=False,
                         n_threads=threads)
        # The prompt in the GGUF's own chat template, as `strait --chat` renders it.
        template = jinja2.Template(self.llm.metadata["tokenizer.chat_template"])
        text = template.render(messages=[{"role": "user", "content": prompt}],
                               add_generation_prompt=True)
        self.context = self.llm.tokenize(text.encode(), add_bos=False, special=True)

    def __call__(self, prefixes):
        return np.stack([self.one(list(p)) for p in prefixes])

    def one(self, prefix):
        seq = self.context + prefix
        have = self.llm.input_ids[: self.llm.n_tokens].tolist()
        common = 0
        while common < min(len(have), len(seq)) and have[common] == seq[common]:
            common += 1
        if common < len(seq):
            self.llm.n_tokens = common  # eval drops the KV cache past this point
            self.llm.eval(seq[common:])
        logits = self.llm.scores[len(seq) - 1].astype(np.float64)
        m = logits.max()
        return logits - (m + np.log(np.exp(logits - m).sum()))


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    fn = LlamaCppLogprobs(MODEL, PROMPT, args.threads)
    ours = strait.FunctionModel(MODEL, logprobs=fn)  # the GGUF's vocabulary and end token
    engine = strait.Model(MODEL)
    for method in ["lcd", "cars"]:
        job = dict(regex=REGEX, method=method, n=args.n, seed=1, max_tokens=12)
        t_fn, a = timed(lambda: ours.sample(**job))
        t_engine, b = timed(lambda: engine.sample(prompt=PROMPT, chat=True, **job))
        print(f"{method}: llama-cpp-python through FunctionModel {t_fn / args.n * 1e3:.0f} ms a "
              f"sample, Strait's engine {t_engine / args.n * 1e3:.0f} ms a sample "
              f"(ratio {t_fn / t_engine:.2f}); LM calls {a[-1]['lm_calls']} vs "
              f"{b[-1]['lm_calls']}")
        print("  llama.cpp:", [s["text"] for s in a[:5]])
        print("  strait:   ", [s["text"] for s in b[:5]])


if __name__ == "__main__":
    main()
