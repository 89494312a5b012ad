"""Where the tests find the repository, the `strait` binary and the model."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "assets/models/SmolLM2-135M-Instruct.Q4_1.gguf"


def strait_bin():
    """The command line the package is compared with: $STRAIT_BIN, else the debug build."""
    return os.environ.get("STRAIT_BIN", str(ROOT / "target/debug/strait"))


def cli(*args):
    """`strait ARGS` run from the repository: its stdout lines as dictionaries."""
    import json

    out = subprocess.run([strait_bin(), *args], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def cli_error(*args):
    """The one-line message of a failing `strait ARGS`, without `strait: `."""
    out = subprocess.run([strait_bin(), *args], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode != 0
    return out.stderr.strip().removeprefix("strait: ")


def without_times(lines):
    """Lines without wall-clock fields, which differ between two runs of one seed."""
    return [{k: v for k, v in line.items() if k not in ("elapsed_ms", "seconds")} for line in lines]


@pytest.fixture(scope="session")
def smollm2():
    if not MODEL.exists():
        pytest.skip(f"{MODEL} is missing (cargo xtask setup downloads it)")
    import strait

    return strait.Model(MODEL)
