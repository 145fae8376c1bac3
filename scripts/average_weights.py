#!/usr/bin/env python3
"""Averages Zeroth weight files element by element: stochastic weight
averaging (Izmailov et al. 2018) of a run's checkpoints, batch-norm running
statistics included.

    scripts/average_weights.py OUT.safetensors IN.safetensors IN.safetensors [...]

Every input must be a Zeroth weight file (safetensors, F32 tensors) of the
same architecture and game with the same tensors. The output keeps the
first input's metadata, gets its own data_hash (as src/nn/safetensors.c
writes it, so a flipped bit is refused on load) and is written atomically
(scripts/atomic_write.py: temp file, fsync, rename). `zeroth eval GAME --model OUT ...` then judges
the average. docs/connect4-recipes.md ("Weight averaging") measured the
last three checkpoints of a Connect Four run averaged this way against
each of them; `learner.average` keeps such an average during a run.
Standard library only."""
import array
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_write import write_atomic  # noqa: E402

MASK = (1 << 64) - 1
HASH_SEED = 0x7A65726F7468  # src/nn/safetensors.c: HASH_SEED, "zeroth"


def mix(z):
    """splitmix64's finaliser (src/core/hash.h, zt_hash_mix)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def hash_bytes(data, seed):
    """zt_hash_bytes (src/core/hash.c) of data with seed."""
    n = len(data)
    h = mix(seed ^ ((n * 0x9E3779B97F4A7C15) & MASK))
    whole = n - n % 8
    for (w,) in struct.iter_unpack("<Q", data[:whole]):
        h = (mix(h ^ w) + 0x632BE59BD9B4E019) & MASK
    tail = int.from_bytes(data[whole:], "little")
    return mix(h ^ tail ^ (((n % 8) << 56) & MASK))


def fail(msg):
    print(f"average_weights: {msg}", file=sys.stderr)
    sys.exit(1)


def read(path):
    """(metadata, [(name, shape, floats)] in data order) of a weight file."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail(f"cannot read '{path}': {e.strerror}")
    if len(raw) < 8:
        fail(f"'{path}' is truncated (no header)")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        fail(f"'{path}' is truncated (header of {n} bytes)")
    try:
        header = json.loads(raw[8 : 8 + n])
    except ValueError:
        fail(f"'{path}' has no safetensors header")
    meta = header.pop("__metadata__", {})
    if meta.get("format") != "zeroth-weights":
        fail(f"'{path}' is not a Zeroth weight file")
    data = raw[8 + n :]
    tensors = []
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, end = t["data_offsets"]
        if t.get("dtype") != "F32" or end > len(data) or (end - begin) % 4:
            fail(f"'{path}': tensor '{name}' is not F32 data inside the file")
        v = array.array("f")
        v.frombytes(data[begin:end])
        if sys.byteorder != "little":
            v.byteswap()
        tensors.append((name, t["shape"], v))
    return meta, tensors


def main():
    if len(sys.argv) < 4:
        fail("usage: scripts/average_weights.py OUT IN IN [IN ...]")
    out, ins = sys.argv[1], sys.argv[2:]
    meta, acc = read(ins[0])
    sums = [(name, shape, [float(x) for x in v]) for name, shape, v in acc]
    for path in ins[1:]:
        m, tensors = read(path)
        for key in ("architecture", "game"):
            if m.get(key) != meta.get(key):
                fail(f"'{path}' holds {key} '{m.get(key)}', not '{meta.get(key)}'")
        if [(n, s) for n, s, _ in tensors] != [(n, s) for n, s, _ in sums]:
            fail(f"'{path}' holds other tensors than '{ins[0]}'")
        for (_, _, s), (_, _, v) in zip(sums, tensors):
            for i, x in enumerate(v):
                s[i] += x
    k = len(ins)
    blobs, header, off, h = [], {}, 0, HASH_SEED
    for name, shape, s in sums:
        v = array.array("f", (x / k for x in s))
        if sys.byteorder != "little":
            v.byteswap()
        b = v.tobytes()
        h = hash_bytes(b, h)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    meta = dict(meta, data_hash=f"{h:016x}")
    text = json.dumps({"__metadata__": meta, **header}, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    try:
        write_atomic(out, struct.pack("<Q", len(text)) + text + b"".join(blobs))
    except OSError as e:
        fail(f"cannot write '{out}': {e.strerror}")
    print(f"{out}: the average of {k} weight files ({off // 4} floats)")


if __name__ == "__main__":
    main()
