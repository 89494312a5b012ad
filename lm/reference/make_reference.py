#!/usr/bin/env python3
"""Regenerates the llama.cpp reference data the `lm` tests compare against.

Ground truth is llama.cpp (through llama-cpp-python, built from its PyPI sdist) on the
same GGUF file the project ships. Writes, next to this script:

  tokenize.json  token ids of varied strings (plain text, special tokens not parsed) and
                 of chat-templated prompts (special tokens parsed)
  logprobs.json  top-20 next-token log-probabilities after several prompts, and along a
                 greedy continuation of one of them (exercises the KV cache)

Usage:
  python -m venv /tmp/llamaenv && /tmp/llamaenv/bin/pip install llama-cpp-python jinja2
  /tmp/llamaenv/bin/python lm/reference/make_reference.py [MODEL.gguf]
"""

import json
import os
import sys

import jinja2
import numpy as np
from llama_cpp import Llama

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODEL = os.path.join(HERE, "..", "..", "assets", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TOP_K = 20

STRINGS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces and trailing   ",
    "tabs\tand\nnewlines\r\n\n\nand blank lines",
    "multiple     spaces        between words",
    "1234567890",
    "3.14159 + 2.71828 = 5.85987",
    "Prices: $1,299.99 or €45,00 (VAT 20%)",
    "Dates 2024-11-22 and 22/11/2024 at 09:30",
    "naïve café, résumé, Ångström, Straße",
    "日本語のテキストと中文文本",
    "Привет, мир! Γειά σου Κόσμε",
    "emoji 🎉🚀👍🏽 and ❤️",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "fn main() { println!(\"{}\", x.iter().map(|v| v * 2).sum::<i32>()); }",
    '{"name": "Alice", "age": 30, "tags": ["a", "b"], "nested": {"ok": true, "v": null}}',
    "<html><body class=\"main\"><p>Hi &amp; bye</p></body></html>",
    "it's we're they've I'm you'll he'd DON'T",
    "<|im_start|>user\nnot parsed as special<|im_end|>",
    "a",
    " ",
    "\n",
    "x²+y³ = z⁴, ½ and ① ② ③, Ⅻ",
    "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
    "https://example.com/path?query=1&other=two#frag",
    "wow!!! really??? ...yes...",
]

# Raw prompts (no template) and chat prompts (rendered with the file's template).
RAW_PROMPTS = [
    "The capital of France is",
    "def add(a, b):\n    return",
    '{"name": "Bob", "age":',
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "1, 2, 3, 4, 5,",
]
CHAT_PROMPTS = [
    "What is 2+2? Answer with a number.",
    "Write a haiku about the sea.",
    "Is the sky blue? Answer yes, no or maybe.",
]
CONTINUE_PROMPT = "Give today's date in ISO format."
CONTINUE_STEPS = 8


def top_logprobs(logits):
    x = np.asarray(logits, dtype=np.float64)
    lp = x - (np.log(np.sum(np.exp(x - x.max()))) + x.max())
    order = np.argsort(-lp, kind="stable")[:TOP_K]
    return [[int(t), float(lp[t])] for t in order]


def main():
    model = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL
    llm = Llama(model_path=model, n_ctx=2048, n_threads=2, n_batch=512, logits_all=True, verbose=False, seed=0)
    template = llm.metadata["tokenizer.chat_template"]
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)

    def chat(prompt):
        return env.from_string(template).render(
            messages=[{"role": "user", "content": prompt}], add_generation_prompt=True
        )

    def tok(text, special):
        return llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def next_logprobs(tokens):
        llm.reset()
        llm.eval(tokens)
        return top_logprobs(llm.scores[llm.n_tokens - 1])

    tokenize = {
        "model": os.path.basename(model),
        "plain": [{"text": s, "ids": tok(s, False)} for s in STRINGS],
        "chat": [{"prompt": p, "rendered": chat(p), "ids": tok(chat(p), True)} for p in CHAT_PROMPTS],
    }

    prompts = [{"prompt": p, "chat": False, "ids": tok(p, False)} for p in RAW_PROMPTS]
    prompts += [{"prompt": p, "chat": True, "ids": tok(chat(p), True)} for p in CHAT_PROMPTS]
    for p in prompts:
        p["top"] = next_logprobs(p["ids"])

    ids = tok(chat(CONTINUE_PROMPT), True)
    steps = []
    generated = []
    for _ in range(CONTINUE_STEPS + 1):
        top = next_logprobs(ids + generated)
        steps.append({"generated": list(generated), "top": top})
        generated.append(top[0][0])
    continuation = {"prompt": CONTINUE_PROMPT, "chat": True, "ids": ids, "steps": steps}

    logprobs = {
        "model": os.path.basename(model),
        "llama_cpp_python": __import__("llama_cpp").__version__,
        "top_k": TOP_K,
        "prompts": prompts,
        "continuation": continuation,
    }
    for name, data in [("tokenize.json", tokenize), ("logprobs.json", logprobs)]:
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
