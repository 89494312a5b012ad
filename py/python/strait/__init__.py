"""Faithful constrained sampling from language models: strait's samplers from Python.

    import strait
    model = strait.Model("toy:gsk")            # or a GGUF file's path
    samples = model.sample(regex="00000|1[01]{4}", method="cars", n=5, seed=0)
    samples[0]["text"], samples[0]["valid"], samples[0]["lm_calls"]

Every call gives what the `strait` command line prints, as dictionaries with the same keys
(docs/cli.md); the same seed gives the same samples. A failure raises `StraitError` with the
command line's one-line message. Sampling releases the GIL.
"""

import json as _json
import os as _os

from . import _native
from ._native import StraitError

__all__ = ["Model", "StraitError", "sweep"]


def _constraint(regex, grammar, json_schema):
    given = [x is not None for x in (regex, grammar, json_schema)]
    if sum(given) != 1:
        raise StraitError("give exactly one constraint: regex=, grammar= or json_schema=")
    if json_schema is not None and not isinstance(json_schema, str):
        json_schema = _json.dumps(json_schema)
    return regex, grammar, json_schema


class Model:
    """A language model: a GGUF file's path, or a toy (`toy:gsk`, `toy:random:SEED`,
    `toy:letters:N:SEED`). `cpu`, `gpu` and `engine` are the command line's flags."""

    def __init__(self, model, *, cpu=False, gpu=False, engine="strait"):
        self.name = str(model)
        self._native = _native.Model(_os.fspath(model), cpu, gpu, engine)

    def __repr__(self):
        return f"strait.Model({self.name!r})"

    def sample(self, *, regex=None, grammar=None, json_schema=None, grammar_format=None,
               prompt="", chat=False, method="cars", n=1, seed=0, max_tokens=32,
               particles=8, steps=10, batch=1, hmm_engine="burn-flex"):
        """Samples under one constraint: `regex` (a regex the whole output matches),
        `grammar` (a grammar's text: Lark, GBNF or a regex, detected unless
        `grammar_format` says) or `json_schema` (a dict or its JSON text). Returns one
        dictionary per output sample, as `strait sample` prints them."""
        regex, grammar, json_schema = _constraint(regex, grammar, json_schema)
        if json_schema is not None and grammar_format is None:
            grammar_format = "json-schema"
        lines = self._native.sample(method, prompt, chat, regex, grammar, json_schema,
                                    grammar_format, n, steps, particles, max_tokens, batch,
                                    seed, hmm_engine)
        return [_json.loads(line) for line in lines]

    def enumerate(self, *, regex=None, grammar=None, json_schema=None, grammar_format=None,
                  prompt="", chat=False, max_tokens=16):
        """Exact P^L of a finite language: every token sequence with its probability, most
        probable first (`strait enumerate`)."""
        regex, grammar, json_schema = _constraint(regex, grammar, json_schema)
        if json_schema is not None and grammar_format is None:
            grammar_format = "json-schema"
        lines = self._native.enumerate(prompt, chat, regex, grammar, json_schema,
                                       grammar_format, max_tokens)
        return [_json.loads(line) for line in lines]

    def score(self, text, *, prompt="", chat=False):
        """log P(text · EOS | prompt), with the tokens and each token's term
        (`strait score`)."""
        return _json.loads(self._native.score(text, prompt, chat))


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
