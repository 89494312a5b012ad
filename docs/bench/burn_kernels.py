#!/usr/bin/env python3
"""The burn engine's kernels per decoded token, by kind, from cubecl's own log.

cubecl (burn's GPU runtime) logs every kernel it runs when a `cubecl.toml` in the working
directory asks for it; at level "basic" it also times each one, waiting for the kernel
to finish (so the times are each kernel's own, and the decode rate of that run is lower).
`strait bench decode --engines burn-wgpu` runs the prompt and then greedy decoding three
times; running it with two token counts and taking the difference leaves the decode
steps alone. Used for docs/bench/engines.md (issue 33).

    python3 docs/bench/burn_kernels.py [STRAIT] [MODEL]

STRAIT: a `strait` built with `--features burn-wgpu` (default target/debug/strait);
MODEL: the GGUF file (default the SmolLM2 file setup fetches).
"""

import collections
import os
import re
import subprocess
import sys
import tempfile

RUNS = 3  # strait bench decode runs each engine three times
UNIT = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}


def kernels(strait, model, tokens, workdir):
    """Seconds and launches per kernel kind over a whole `bench decode` run."""
    log = os.path.join(workdir, f"kernels{tokens}.log")
    with open(os.path.join(workdir, "cubecl.toml"), "w") as f:
        f.write(f'[profiling.logger]\nlevel = "basic"\nfile = "{log}"\n')
    subprocess.run(
        [strait, "bench", "decode", "--model", model, "--engines", "burn-wgpu",
         "--tokens", str(tokens)],
        cwd=workdir, check=True, stdout=subprocess.DEVNULL,
    )
    secs, count = collections.Counter(), collections.Counter()
    for line in open(log, encoding="utf-8"):
        m = re.match(r"\|\s*([\d.]+)(ms|µs|ns|s)\s*\|\s*(\w+)", line)
        if m:
            kind = re.sub(r"_[0-9a-f]{8}$", "", m.group(3))
            secs[kind] += float(m.group(1)) * UNIT[m.group(2)]
            count[kind] += 1
    return secs, count


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    strait = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else f"{root}/target/debug/strait")
    model = os.path.abspath(sys.argv[2] if len(sys.argv) > 2
                            else f"{root}/assets/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    with tempfile.TemporaryDirectory() as d:
        s4, n4 = kernels(strait, model, 4, d)
        s12, n12 = kernels(strait, model, 12, d)
    steps = (12 - 4) * RUNS
    rows = [((s12[k] - s4[k]) / steps, (n12[k] - n4[k]) / steps, k) for k in set(s4) | set(s12)]
    total = sum(r[0] for r in rows)
    print("| kernel | launches a token | ms a token | share |")
    print("|---|---:|---:|---:|")
    for secs, n, kind in sorted(rows, reverse=True):
        if n >= 0.5:
            print(f"| {kind} | {n:.0f} | {secs * 1e3:.1f} | {secs / total:.1%} |")
    print(f"| all | {sum(r[1] for r in rows):.0f} | {total * 1e3:.1f} | |")


if __name__ == "__main__":
    main()
