"""`strait.FunctionModel`: any model given as a Python function. A numpy bigram over a
vocabulary with two tokenizations of a string gives the exact P^L by `enumerate` (checked
against a brute-force sum here) and the samplers' outputs follow it; G_sk's model written
in Python gives the same samples as the built-in toy at the same seed; a function that
raises or answers wrongly gives a StraitError naming the prefix and the problem."""

import itertools
import math
import re

import numpy as np
import pytest

import strait

VOCAB = [b"a", b"b", b"ab", b""]  # "ab" is spelt two ways
EOS = 3
LANGUAGE = "ab|b|ba|aab"
MAX_TOKENS = 4


def bigram_table(seed=11):
    """A seeded random bigram: row t is the next-token distribution after token t, the
    last row after the empty prefix."""
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(len(VOCAB)), size=len(VOCAB) + 1)


TABLE = bigram_table()


def bigram(prefixes, calls=None):
    if calls is not None:
        calls.append(len(prefixes))
    rows = [TABLE[p[-1]] if p else TABLE[-1] for p in prefixes]
    return np.log(np.array(rows))


def brute_force():
    """P^L by enumeration of every token sequence of at most MAX_TOKENS (EOS included)."""
    out = {}
    for k in range(1, MAX_TOKENS):
        for seq in itertools.product(range(EOS), repeat=k):
            text = b"".join(VOCAB[t] for t in seq).decode()
            if not re.fullmatch(LANGUAGE, text):
                continue
            p, prev = 1.0, -1
            for t in (*seq, EOS):
                p *= TABLE[prev][t]
                prev = t
            out[(*seq, EOS)] = p
    z = sum(out.values())
    return {s: p / z for s, p in out.items()}


def tv(samples, exact):
    counts = {}
    total = 0.0
    for s in samples:
        w = s["weight"] if s.get("weight") is not None else 1.0
        counts[tuple(s["tokens"])] = counts.get(tuple(s["tokens"]), 0.0) + w
        total += w
    keys = set(counts) | set(exact)
    return 0.5 * sum(abs(counts.get(k, 0.0) / total - exact.get(k, 0.0)) for k in keys)


def test_enumerate_is_the_exact_distribution():
    m = strait.FunctionModel(VOCAB, eos=EOS, logprobs=bigram)
    got = {tuple(e["tokens"]): e["p"] for e in m.enumerate(regex=LANGUAGE, max_tokens=MAX_TOKENS)}
    want = brute_force()
    assert set(got) == set(want)
    for k in want:
        assert abs(got[k] - want[k]) < 1e-9, (k, got[k], want[k])


@pytest.mark.parametrize("method,extra", [
    ("cars", {}),
    ("cars", {"batch": 4}),
    ("rs", {}),
    ("awrs-smc", {"particles": 4}),
    ("mcmc-restart", {"steps": 8}),
])
def test_samplers_follow_it(method, extra):
    """Sample distributions within a TV bound that a wrong weight would break: with about
    3,000 samples over 7 outcomes the TV of an exact sampler is about 0.02."""
    calls = []
    m = strait.FunctionModel(VOCAB, eos=EOS, logprobs=lambda p: bigram(p, calls))
    n = 3000 if method in ("cars", "rs") else 600
    out = m.sample(regex=LANGUAGE, method=method, n=n, seed=5, max_tokens=MAX_TOKENS, **extra)
    assert all(s["valid"] for s in out if s.get("weight") in (None,) or s["weight"] > 0)
    bound = 0.05 if method in ("cars", "rs") else 0.1
    assert tv(out, brute_force()) < bound, method
    if extra.get("batch", 1) > 1 or method == "awrs-smc":
        assert max(calls) > 1, "batched samplers call the function once per batch"


GSK_ZERO, GSK_ONE, GSK_EOS = 0, 1, 2


def gsk(prefixes):
    """sampler-core's G_sk model (toy/gsk.rs), written again in Python."""
    out = []
    for p in prefixes:
        if len(p) >= 5 or GSK_EOS in p:
            probs = [0.0, 0.0, 1.0]
        elif list(p) == [GSK_ZERO] * 4:
            probs = [0.45e-8, 1.0 - 0.45e-8, 0.0]
        else:
            probs = [0.45, 0.55, 0.0]
        out.append([math.log(q) if q > 0 else -math.inf for q in probs])
    return out  # plain lists, no numpy


@pytest.mark.parametrize("method", ["cars", "lcd", "awrs-smc", "mcmc-uniform"])
def test_the_same_model_as_a_toy_gives_the_same_samples(method):
    ours = strait.FunctionModel([b"0", b"1", b""], eos=GSK_EOS, logprobs=gsk)
    toy = strait.Model("toy:gsk")
    job = dict(regex="00000|1[01]{4}", method=method, n=30, seed=3, max_tokens=8)
    a = [(s["tokens"], s["logp"]) for s in ours.sample(**job)]
    b = [(s["tokens"], s["logp"]) for s in toy.sample(**job)]
    assert a == b


@pytest.mark.parametrize("answer,message", [
    (lambda p: np.zeros((len(p), 3)), "has 3 entries, not 4"),
    (lambda p: np.full((len(p), 4), np.nan), "log-probability nan"),
    (lambda p: np.ones((len(p), 4)), "is not normalized"),
    (lambda p: np.zeros(4), "shape (4,)"),
    (lambda p: np.zeros((0, 4)), "returned 0 rows for 1 prefixes"),
])
def test_wrong_answers_name_the_prefix_and_the_problem(answer, message):
    m = strait.FunctionModel(VOCAB, eos=EOS, logprobs=answer)
    with pytest.raises(strait.StraitError) as e:
        m.sample(regex=LANGUAGE, method="lcd", n=1, seed=0, max_tokens=MAX_TOKENS)
    assert message.lower() in str(e.value).lower(), str(e.value)
    assert "prefix" in str(e.value), str(e.value)


def test_an_exception_in_the_function_is_a_strait_error_with_its_message():
    def boom(prefixes):
        raise ValueError("the GPU is on fire")

    m = strait.FunctionModel(VOCAB, eos=EOS, logprobs=boom)
    with pytest.raises(strait.StraitError, match=r"prefixes \[\]: ValueError: the GPU is on fire"):
        m.sample(regex=LANGUAGE, method="cars", n=1, seed=0, max_tokens=MAX_TOKENS)


def test_a_prompt_or_a_bad_vocabulary_is_refused():
    m = strait.FunctionModel(VOCAB, eos=EOS, logprobs=bigram)
    with pytest.raises(strait.StraitError, match="holds its own context"):
        m.sample(regex=LANGUAGE, prompt="hi", method="cars", n=1)
    with pytest.raises(strait.StraitError, match="not in the vocabulary"):
        strait.FunctionModel(VOCAB, eos=9, logprobs=bigram)
    with pytest.raises(strait.StraitError, match="GGUF"):
        strait.FunctionModel("tokenizer.txt", eos=0, logprobs=bigram)
