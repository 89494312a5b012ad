"""Faithful constrained sampling from language models: strait's samplers from Python.

    import strait
    model = strait.Model("toy:gsk")            # or a GGUF file's path
    samples = model.sample(regex="00000|1[01]{4}", method="cars", n=5, seed=0)
    samples[0]["text"], samples[0]["valid"], samples[0]["lm_calls"]

Every call gives what the `strait` command line prints, as dictionaries with the same keys
(docs/cli.md); the same seed gives the same samples. A failure raises `StraitError` with the
command line's one-line message. Sampling releases the GIL.
"""

import array as _array
import json as _json
import os as _os

from . import _native
from ._native import StraitError

__all__ = ["FunctionModel", "Model", "StraitError", "sweep"]


def _constraint(regex, grammar, json_schema):
    given = [x is not None for x in (regex, grammar, json_schema)]
    if sum(given) != 1:
        raise StraitError("give exactly one constraint: regex=, grammar= or json_schema=")
    if json_schema is not None and not isinstance(json_schema, str):
        json_schema = _json.dumps(json_schema)
    return regex, grammar, json_schema


def _request(regex, grammar, json_schema, options):
    """The request every front end reads (sampler_core::SampleRequest), as a dict."""
    regex, grammar, json_schema = _constraint(regex, grammar, json_schema)
    request = {"regex": regex, "grammar": grammar, "json_schema": json_schema, **options}
    return {k: v for k, v in request.items() if v is not None}


class Model:
    """A language model: a GGUF file's path, or a toy (`toy:gsk`, `toy:random:SEED`,
    `toy:letters:N:SEED`). `cpu`, `gpu` and `engine` are the command line's flags."""

    def __init__(self, model, *, cpu=False, gpu=False, engine="strait"):
        self.name = str(model)
        self._native = _native.Model(_os.fspath(model), cpu, gpu, engine)

    def __repr__(self):
        return f"strait.Model({self.name!r})"

    def sample(self, *, regex=None, grammar=None, json_schema=None, **options):
        """Samples under one constraint: `regex` (a regex the whole output matches),
        `grammar` (a grammar's text: Lark, GBNF or a regex, detected unless
        `grammar_format` says) or `json_schema` (a dict or its JSON text). Returns one
        dictionary per output sample, as `strait sample` prints them.

        `options` are the request every front end reads (the CLI's flags, JavaScript's
        camelCase options; docs/python.md): `prompt` (""), `chat` (False), `method`
        ("cars"), `n` (1), `seed` (0), `max_tokens` (32), `particles` (8), `steps` (10),
        `batch` (1), `grammar_format`, `max_generations` (10000), `generation_cap`,
        `hmm_engine` ("burn-flex"), `hmm_states`, `hmm_sequences`, `hmm_iterations`. An
        unknown option raises `StraitError` naming it."""
        lines = self._native.sample(_json.dumps(_request(regex, grammar, json_schema, options)))
        return [_json.loads(line) for line in lines]

    def enumerate(self, *, regex=None, grammar=None, json_schema=None, max_tokens=16,
                  **options):
        """Exact P^L of a finite language: every token sequence with its probability, most
        probable first (`strait enumerate`). `options`: `prompt`, `chat`, `grammar_format`
        (the request of `sample`)."""
        lines = self._native.enumerate(_json.dumps(
            _request(regex, grammar, json_schema, dict(max_tokens=max_tokens, **options))))
        return [_json.loads(line) for line in lines]

    def score(self, text, *, prompt="", chat=False):
        """log P(text · EOS | prompt), with the tokens and each token's term
        (`strait score`)."""
        return _json.loads(self._native.score(text, prompt, chat))


class FunctionModel(Model):
    """Any language model, given as a function: Strait's samplers over the model you
    already run (transformers, llama-cpp-python, vLLM, numpy).

    `vocab`: each token's bytes (a list of `bytes`; `str` items are UTF-8), or a GGUF file's
    path to take its tokenizer's vocabulary from. `eos`: the end token's id (taken from the
    GGUF when `vocab` is one and `eos` is not given). `logprobs(prefixes)`: given a batch of
    token-id lists (the tokens generated so far: the function holds its own prompt), one
    vector of natural-log probabilities over the vocabulary per prefix, as a numpy array of
    shape [batch, len(vocab)] or a list of lists. Samplers that batch (SMC's particles, MCMC with `batch=`,
    rejection with `batch=`) call it once per batch.

    A function that raises, or returns the wrong shape, NaN or unnormalized scores, ends the
    call with a `StraitError` naming the prefix and the problem. Calls take no `prompt=`.

        m = strait.FunctionModel([b"a", b"b", b""], eos=2, logprobs=my_bigram)
        m.sample(regex="ab|b", method="cars", n=10, seed=0)
    """

    def __init__(self, vocab, eos=None, logprobs=None):
        if logprobs is None or not callable(logprobs):
            raise StraitError("FunctionModel needs logprobs=, a callable")
        if isinstance(vocab, (str, _os.PathLike)):
            path = _os.fspath(vocab)
            if not path.endswith(".gguf"):
                raise StraitError(
                    f"{path}: give the vocabulary as a list of token byte strings, or a "
                    "GGUF file's path")
            tokens, gguf_eos = _native.gguf_vocabulary(path)
            eos = gguf_eos if eos is None else eos
            self.name = f"FunctionModel(vocabulary of {path})"
        else:
            tokens = [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in vocab]
            self.name = f"FunctionModel({len(tokens)} tokens)"
        if eos is None:
            raise StraitError("FunctionModel needs eos=, the end token's id")
        eos = [int(e) for e in eos] if isinstance(eos, (list, tuple)) else [int(eos)]
        self.vocab_size = len(tokens)
        self._native = _native.Model.from_function(tokens, eos, _rows_of(logprobs))

    def __repr__(self):
        return f"strait.{self.name}"


def _rows_of(logprobs):
    """The user's callable, its answers as (rows, columns, float64 bytes) for the native
    module (numpy when installed, plain lists otherwise)."""
    try:
        import numpy as np
    except ImportError:  # lists only
        np = None

    def call(prefixes):
        out = logprobs(prefixes)
        if np is not None:
            a = np.ascontiguousarray(out, dtype=np.float64)
            if a.ndim != 2:
                raise StraitError(
                    f"logprobs returned an array of shape {a.shape}: give one row per prefix, "
                    "shape [batch, vocabulary]")
            return a.shape[0], a.shape[1], a.tobytes()
        rows = [[float(x) for x in r] for r in out]
        columns = len(rows[0]) if rows else 0
        if any(len(r) != columns for r in rows):
            raise StraitError("logprobs returned rows of different lengths")
        return len(rows), columns, _array.array("d", [x for r in rows for x in r]).tobytes()

    return call


def sweep(plan, out, ray_address=None):
    """Runs a sweep plan (`strait sweep PLAN --out OUT`): here when `ray_address` is None,
    else as Ray tasks on the cluster at `ray_address` ("auto", "local", or an address),
    one model per worker process, loaded once. Finished cells in `out` are kept. Returns
    {"cells", "finished", "failed"}."""
    plan, out = _os.fspath(plan), _os.fspath(out)
    if ray_address is None:
        return _json.loads(_native.sweep_local(plan, out))
    from ._ray import sweep_on_ray

    return sweep_on_ray(plan, out, ray_address)
