#!/usr/bin/env python3
"""The command line under load (issue 34, part 5): RUNS `strait sample` runs of mixed
methods back to back (toy and real model), each one's peak resident memory and time read
from the kernel (wait4's rusage), printed every 100 runs; then two long runs (`--n LONG` on
the toy G_sk model, `--n REAL_LONG` on SmolLM2) whose resident memory is read from /proc
every 0.1 s.

Usage: python3 docs/bench/cli_load.py STRAIT [RUNS] [LONG] [REAL_LONG]
  (STRAIT: a release build of `strait`; RUNS default 1000; LONG default 100000 samples on
  toy G_sk; REAL_LONG default 2000 lcd samples on SmolLM2, a second long run)
"""
import os, statistics, subprocess, sys, time

STRAIT = sys.argv[1]
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
LONG = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
EVERY = max(1, min(100, RUNS // 4))
REAL_LONG = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
MODEL = "assets/models/SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = "Is the sky blue? Answer yes, no or maybe."
GSK = "00000|1[01]{4}"
REAL = ["lcd", "cars", "smc-gcd", "awrs-smc", "mcmc-uniform", "asap"]
TOY = ["lcd", "cars", "rs", "ars", "asap", "mcmc-priority", "awrs-smc", "p-gcd-smc", "smc-gcd", "gcd-budget"]


def command(i):
    """Run i: every third on the real model, the rest on toy G_sk; methods in turn."""
    seed = str(i)
    if i % 3 == 0:
        m = REAL[(i // 3) % len(REAL)]
        return [STRAIT, "sample", "--model", MODEL, "--chat", "--prompt", PROMPT,
                "--regex", "(yes|no|maybe)", "--method", m, "--n", "2", "--seed", seed,
                "--max-tokens", "6"]
    m = TOY[i % len(TOY)]
    return [STRAIT, "sample", "--model", "toy:gsk", "--regex", GSK, "--method", m, "--n", "20", "--seed", seed]


def run(cmd):
    """(exit status, seconds, peak resident MB) of one run."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace").strip().splitlines()
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        print(f"run {' '.join(cmd[1:])}: exit {code}: {err[-1] if err else ''}", flush=True)
    return code, time.time() - t0, usage.ru_maxrss / 1024


def main():
    print(f"{RUNS} runs of `strait sample`, mixed methods (every third on SmolLM2, the rest on toy G_sk)")
    print("runs      failed  real: peak RSS MB median/max  s median | toy: peak RSS MB median/max  s median")
    window, failed = [], 0
    for i in range(RUNS):
        code, secs, rss = run(command(i))
        failed += code != 0
        window.append((i % 3 == 0, secs, rss))
        if (i + 1) % EVERY == 0:
            real = [w for w in window if w[0]]
            toy = [w for w in window if not w[0]]
            f = lambda ws, k: statistics.median(w[k] for w in ws)
            print(f"{i + 2 - EVERY:>4}-{i + 1:<4} {failed:>6}  {f(real, 2):7.1f} / {max(w[2] for w in real):7.1f}  {f(real, 1):6.2f}"
                  f" | {f(toy, 2):7.1f} / {max(w[2] for w in toy):7.1f}  {f(toy, 1):6.3f}", flush=True)
            window = []
    long_run([STRAIT, "sample", "--model", "toy:gsk", "--regex", GSK, "--method", "cars", "--n", str(LONG), "--seed", "1"])
    long_run([STRAIT, "sample", "--model", MODEL, "--chat", "--prompt", PROMPT, "--regex", "(yes|no|maybe)",
              "--method", "lcd", "--n", str(REAL_LONG), "--seed", "1", "--max-tokens", "6"])


def long_run(cmd):
    """One long run, its resident memory read from /proc every 0.1 s."""
    print(f"\nOne long run: `strait {' '.join(cmd[1:])}`; resident MB every 0.1 s")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples, t0 = [], time.time()
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as s:
                for line in s:
                    if line.startswith("VmRSS:"):
                        samples.append((time.time() - t0, int(line.split()[1]) / 1024))
        except FileNotFoundError:
            break
        time.sleep(0.1)
    print(f"exit {p.returncode} after {time.time() - t0:.1f} s; {len(samples)} readings")
    for t, mb in samples[:: max(1, len(samples) // 10)]:
        print(f"  {t:6.1f} s  {mb:7.1f} MB")
    if samples:
        print(f"  first {samples[0][1]:.1f} MB, last {samples[-1][1]:.1f} MB, max {max(m for _, m in samples):.1f} MB")

if __name__ == "__main__":
    main()
