"""The Python package gives what the command line gives: the same samples at the same seed,
the same exact distribution and scores, the same one-line errors."""

import json
import threading
import time

import pytest

import strait
from conftest import MODEL, ROOT, cli, cli_error, without_times

GSK = "00000|1[01]{4}"


@pytest.mark.parametrize("method,extra", [
    ("cars", {}), ("lcd", {}), ("mcmc-uniform", {"steps": 3}),
    ("awrs-smc", {"particles": 4}), ("rs", {"batch": 4}), ("auto", {"particles": 4}),
])
def test_toy_samples_are_the_clis_at_the_same_seed(method, extra):
    model = strait.Model("toy:gsk")
    ours = model.sample(regex=GSK, method=method, n=6, seed=11, max_tokens=8, **extra)
    flags = [f"--{k}={v}" for k, v in extra.items()]
    theirs = cli("sample", "--model", "toy:gsk", "--regex", GSK, "--method", method,
                 "--n", "6", "--seed", "11", "--max-tokens", "8", *flags)
    assert without_times(ours) == without_times(theirs)
    assert ours and set(ours[0]) >= {"text", "tokens", "logp", "valid", "weight", "lm_calls",
                                     "forward_tokens", "constraint_checks", "elapsed_ms"}


def test_a_grammar_text_and_a_schema_dict_are_the_clis_files():
    gbnf = (ROOT / "assets/examples/gsk.gbnf").read_text()
    model = strait.Model("toy:gsk")
    ours = model.sample(grammar=gbnf, method="cars", n=5, seed=3, max_tokens=8)
    theirs = cli("sample", "--model", "toy:gsk", "--grammar", "assets/examples/gsk.gbnf",
                 "--method", "cars", "--n", "5", "--seed", "3", "--max-tokens", "8")
    assert without_times(ours) == without_times(theirs)


def test_enumerate_and_score_are_the_clis():
    model = strait.Model("toy:gsk")
    assert model.enumerate(regex=GSK, max_tokens=8) == cli(
        "enumerate", "--model", "toy:gsk", "--regex", GSK, "--max-tokens", "8")
    assert model.score("10101") == cli("score", "--model", "toy:gsk", "--text", "10101")[0]


def test_errors_are_exceptions_with_the_clis_message():
    model = strait.Model("toy:gsk")
    with pytest.raises(strait.StraitError) as e:
        model.sample(regex=GSK, method="carz")
    assert str(e.value) == cli_error("sample", "--model", "toy:gsk", "--regex", GSK,
                                     "--method", "carz")
    with pytest.raises(strait.StraitError, match=r"^grammar:2:8: "):
        model.sample(grammar="root ::= \"0\"\nx ::= (", grammar_format="gbnf", method="cars")
    with pytest.raises(strait.StraitError, match="exactly one constraint"):
        model.sample(regex=GSK, grammar="root ::= \"0\"")
    with pytest.raises(strait.StraitError, match="no-such.gguf"):
        strait.Model("no-such.gguf")
    with pytest.raises(strait.StraitError, match="gcd-budget"):
        model.sample(grammar="start: \"0\"", grammar_format="lark", method="gcd-budget")


def test_the_request_is_the_clis_and_javascripts():
    """Every option of the one request type (sampler_core::SampleRequest) is accepted, with
    the CLI's meaning; an unknown one is refused by name."""
    model = strait.Model("toy:gsk")
    ours = model.sample(regex=GSK, method="cars", n=4, seed=2, max_tokens=8, generation_cap=100,
                        max_generations=50)
    theirs = cli("sample", "--model", "toy:gsk", "--regex", GSK, "--method", "cars", "--n", "4",
                 "--seed", "2", "--max-tokens", "8", "--generation-cap", "100",
                 "--max-generations", "50")
    assert without_times(ours) == without_times(theirs)
    with pytest.raises(strait.StraitError, match="max_token"):
        model.sample(regex=GSK, max_token=8)


def test_real_model_samples_are_the_clis(smollm2):
    args = dict(regex=" (red|green|blue)", prompt="My favourite colour is", max_tokens=6)
    ours = smollm2.sample(method="cars", n=3, seed=5, **args)
    theirs = cli("sample", "--model", str(MODEL), "--cpu", "--regex", args["regex"],
                 "--prompt", args["prompt"], "--max-tokens", "6", "--method", "cars",
                 "--n", "3", "--seed", "5")
    assert without_times(ours) == without_times(theirs)


def test_a_schema_dict_is_the_clis_schema_file(smollm2, tmp_path):
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    prompt = (ROOT / "assets/examples/json_x_integer.prompt.txt").read_text()
    ours = smollm2.sample(json_schema=schema, prompt=prompt, chat=True, method="lcd", n=2,
                          seed=1, max_tokens=12)
    theirs = cli("sample", "--model", str(MODEL), "--cpu", "--json-schema", str(path),
                 "--prompt", prompt, "--chat", "--method", "lcd", "--n", "2", "--seed", "1",
                 "--max-tokens", "12")
    assert without_times(ours) == without_times(theirs)
    assert all(isinstance(json.loads(s["text"])["x"], int) for s in ours if s["valid"])


def test_sampling_releases_the_gil(smollm2):
    """Another Python thread runs while the model samples, at about the pace it runs while
    this thread sleeps (holding the GIL, it would run only between calls)."""
    ticks, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1

    t = threading.Thread(target=count)
    t.start()
    before = ticks[0]
    time.sleep(0.2)
    idle_rate = (ticks[0] - before) / 0.2
    start = time.monotonic()
    before = ticks[0]
    # Long enough to tell, however fast the build (the release wheel takes 0.16 s a call).
    while time.monotonic() - start < 0.4:
        smollm2.sample(regex="[a-z ]{20}", prompt="Once upon a time", method="lcd", n=1,
                       max_tokens=20)
    during, secs = ticks[0] - before, time.monotonic() - start
    stop.set()
    t.join()
    print(f"counter pace while sampling: {during / secs / idle_rate:.2f} of its idle pace")
    assert during / secs > 0.25 * idle_rate, (during, secs, idle_rate)
