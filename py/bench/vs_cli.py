"""Python's `Model.sample` against the `strait` binary on the same job: SmolLM2, the date
example (a regex), 40 masked samples (`lcd`), seed 1, each run a fresh process that loads
the model and samples, the two interleaved (the machine's speed drifts). Prints the median
of each and their ratio, and checks that both drew the same samples.

    pip install ./py && cargo build --release -p cli
    python3 py/bench/vs_cli.py [--rounds 3] [--bin target/release/strait]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "assets/models/SmolLM2-135M-Instruct.Q4_1.gguf")
REGEX = open(os.path.join(ROOT, "assets/examples/date.regex")).read().strip()
PROMPT = open(os.path.join(ROOT, "assets/examples/date.prompt.txt")).read()
JOB = dict(method="lcd", n=40, seed=1, max_tokens=16)

PYTHON = f"""
import json, strait
m = strait.Model({MODEL!r})
out = m.sample(regex={REGEX!r}, prompt={PROMPT!r}, chat=True, **{JOB!r})
print(json.dumps([s["tokens"] for s in out]))
"""


def timed(cmd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/strait"))
    args = ap.parse_args()
    cli = [args.bin, "sample", "--model", MODEL, "--regex", REGEX, "--prompt", PROMPT,
           "--chat", "--method", JOB["method"], "--n", str(JOB["n"]), "--seed",
           str(JOB["seed"]), "--max-tokens", str(JOB["max_tokens"])]
    py, cl = [], []
    for r in range(args.rounds):
        t, out = timed([sys.executable, "-c", PYTHON])
        py.append(t)
        py_tokens = json.loads(out)
        t, out = timed(cli)
        cl.append(t)
        cli_tokens = [json.loads(line)["tokens"] for line in out.splitlines()]
        same = py_tokens == cli_tokens
        print(f"round {r + 1}: python {py[-1]:.2f} s, cli {cl[-1]:.2f} s, same samples: {same}")
        if not same:
            sys.exit("the two drew different samples")
    p, c = statistics.median(py), statistics.median(cl)
    print(json.dumps({"job": JOB, "python_s": round(p, 3), "cli_s": round(c, 3),
                      "python_over_cli": round(p / c, 3)}))


if __name__ == "__main__":
    main()
