"""`strait.sweep` writes the files `strait sweep` writes, here and as Ray tasks."""

import os
import pathlib
import subprocess

import pytest

import strait
from conftest import ROOT, strait_bin, without_times

PLAN = """
title = "sweep from python"
models = ["toy:gsk"]
samplers = ["lcd", "cars", "mcmc-restart", "awrs-smc"]
seeds = 2
[constraints.sk]
regex = "00000|1[01]{4}"
[constraints.gbnf]
grammar = "%s"
[params]
n = 12
max_tokens = 8
steps = [2, 4]
particles = [2, 4]
""" % (ROOT / "assets/examples/gsk.gbnf")


def cell_files(out):
    """Every cell and exact file of a sweep's folder, wall times left out."""
    import json

    files = {}
    for sub in ("cells", "exact"):
        for p in sorted((pathlib.Path(out) / sub).iterdir()):
            text = p.read_text()
            if p.suffix == ".jsonl":
                files[p.name] = without_times([json.loads(l) for l in text.splitlines()])
            else:
                files[p.name] = without_times([json.loads(text)])
    return files


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "plan.toml"
    path.write_text(PLAN)
    return path


@pytest.fixture(scope="module")
def cli_sweep(plan, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli")
    run = subprocess.run([strait_bin(), "sweep", str(plan), "--out", str(out)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return out


def test_a_local_sweep_is_the_clis(plan, cli_sweep, tmp_path):
    counts = strait.sweep(plan, tmp_path)
    assert counts == {"cells": 24, "finished": 24, "failed": 0}
    assert cell_files(tmp_path) == cell_files(cli_sweep)
    assert (tmp_path / "summary.md").read_text() .count("| cars |") == 2


def test_a_ray_sweep_is_the_clis(plan, cli_sweep, tmp_path):
    if os.environ.get("STRAIT_REQUIRE_RAY") != "1":
        pytest.importorskip("ray")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        # Half of it first, as if an earlier run had stopped: those cells are kept.
        strait.sweep(plan, tmp_path)
        kept = sorted((tmp_path / "cells").iterdir())[:12]
        for p in sorted((tmp_path / "cells").iterdir())[12:]:
            p.unlink()
        mtimes = {p.name: p.stat().st_mtime_ns for p in kept}
        counts = strait.sweep(plan, tmp_path, ray_address="auto")
    finally:
        ray.shutdown()
    assert counts == {"cells": 24, "finished": 24, "failed": 0}
    assert cell_files(tmp_path) == cell_files(cli_sweep)
    assert all((tmp_path / "cells" / n).stat().st_mtime_ns == t for n, t in mtimes.items())
