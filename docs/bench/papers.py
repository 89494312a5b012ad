"""Refreshes the papers' results from the sweep folders: for each plan of
assets/sweeps/papers/, `strait sweep PLAN --out DIR/NAME --summarize` (runs nothing), then
its page data into assets/papers/NAME.json (what the page draws) and its tables into
docs/bench/papers.md between the markers `<!-- tables:NAME -->` and `<!-- /tables -->`.
The tables in the doc are the command's output, never typed.

    python3 docs/bench/papers.py SWEEPS_DIR [--bin target/release/strait]
"""

import argparse
import os
import re
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLANS = ["cars_table7", "mcmc_kl", "asap_kl"]


def tables(summary):
    """The `### ` tables of a summary.md, each with its line on what the cells are."""
    text = open(summary).read()
    blocks = re.findall(r"^### .*?^Cells: .*?$", text, flags=re.S | re.M)
    return "\n\n".join(b.strip() for b in blocks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sweeps")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/strait"))
    args = ap.parse_args()
    doc_path = os.path.join(ROOT, "docs/bench/papers.md")
    doc = open(doc_path).read()
    for name in PLANS:
        plan = f"assets/sweeps/papers/{name}.toml"
        out = os.path.join(args.sweeps, name)
        run = subprocess.run([args.bin, "sweep", plan, "--out", out, "--summarize"],
                             cwd=ROOT, capture_output=True, text=True, check=True)
        print(run.stderr.strip().splitlines()[-1])
        shutil.copy(os.path.join(out, "page.json"), os.path.join(ROOT, "assets/papers", f"{name}.json"))
        block = f"<!-- tables:{name} -->\n{tables(os.path.join(out, 'summary.md'))}\n<!-- /tables -->"
        doc, n = re.subn(rf"<!-- tables:{name} -->.*?<!-- /tables -->", lambda _: block, doc, flags=re.S)
        if n != 1:
            raise SystemExit(f"docs/bench/papers.md has no markers for {name}")
    open(doc_path, "w").write(doc)


if __name__ == "__main__":
    main()
