"""A GGUF with the same header and tensor shapes as a real one, and random quantized weights.

For speed runs on a machine the real file cannot reach (the device machine takes 64 MiB a
call; SmolLM2-135M's Q4_1 file is 98 MB): the time of a forward pass depends on the shapes
and types, not on the weight values. `pack` keeps the real file's header (metadata and
tokenizer), its F32 tensors (the norms) and the table of tensors, about 2 MB; `unpack`
rebuilds a file of the same size with every quantized block drawn at random with finite
scales (numpy only, no `gguf` package needed there). Greedy text from it is gibberish.

    python3 lm/reference/same_shapes.py pack  MODEL.gguf  model.pack
    python3 lm/reference/same_shapes.py unpack model.pack  random.gguf
"""

import json
import struct
import sys

import numpy as np

# Bytes per block and weights per block of the quantized types this script fills.
BLOCKS = {"Q4_0": (18, 32), "Q4_1": (20, 32), "Q8_0": (34, 32)}


def pack(model, out):
    import gguf  # only here, where the real file is

    reader = gguf.GGUFReader(model)
    start = min(t.data_offset for t in reader.tensors)
    raw = open(model, "rb").read()
    table, kept = [], []
    for t in reader.tensors:
        kind = t.tensor_type.name
        if kind != "F32" and kind not in BLOCKS:
            sys.exit(f"{t.name}: type {kind} is not one this script fills")
        entry = {"name": t.name, "type": kind, "offset": int(t.data_offset), "bytes": int(t.n_bytes)}
        if kind == "F32":
            kept.append(raw[t.data_offset : t.data_offset + t.n_bytes])
        table.append(entry)
    meta = json.dumps({"size": len(raw), "header": start, "tensors": table}).encode()
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(meta)))
        f.write(meta)
        f.write(raw[:start])
        for k in kept:
            f.write(k)


def unpack(pack_file, out):
    data = open(pack_file, "rb").read()
    (n,) = struct.unpack_from("<Q", data, 0)
    meta = json.loads(data[8 : 8 + n])
    pos = 8 + n
    body = bytearray(meta["size"])
    body[: meta["header"]] = data[pos : pos + meta["header"]]
    pos += meta["header"]
    rng = np.random.default_rng(0)
    for t in meta["tensors"]:
        o, size = t["offset"], t["bytes"]
        if t["type"] == "F32":
            body[o : o + size] = data[pos : pos + size]
            pos += size
            continue
        block, _ = BLOCKS[t["type"]]
        blocks = rng.integers(0, 256, size=(size // block, block), dtype=np.uint8)
        # Finite scales giving weights of about 0.04 standard deviation, as trained
        # weights have: Q8_0 d = 3e-4 (codes -128..127), Q4_0/Q4_1 d = 0.01 (codes 0..15,
        # minus 8 or plus m = -0.08).
        d = 3e-4 if t["type"] == "Q8_0" else 0.01
        blocks[:, 0:2] = np.frombuffer(np.float16(d).tobytes(), np.uint8)
        if t["type"] == "Q4_1":
            blocks[:, 2:4] = np.frombuffer(np.float16(-0.08).tobytes(), np.uint8)
        body[o : o + size] = blocks.tobytes()
    open(out, "wb").write(body)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("pack", "unpack"):
        sys.exit(__doc__)
    (pack if sys.argv[1] == "pack" else unpack)(sys.argv[2], sys.argv[3])
