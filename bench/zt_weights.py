"""Zeroth's exported nets in Python, with numpy alone: the safetensors reader
and the architecture string that `zeroth bench nn --export DIR` writes, for
the comparison scripts (torch_compare.py, mctx_selfplay.py)."""
import json

import numpy as np

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I32": np.int32,
           "I64": np.int64, "I8": np.int8, "U8": np.uint8}


def read_safetensors(path):
    """(tensors, metadata) of a safetensors file. The format: a u64
    little-endian header length, a JSON header (dtype, shape and data
    offsets per tensor, and "__metadata__"), then the data. Read here so
    that no safetensors package is needed where only PyTorch or JAX is
    installed (the GPU machine's image)."""
    with open(path, "rb") as f:
        blob = f.read()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", None) or {}
    base = 8 + n
    tensors = {}
    for name, t in header.items():
        lo, hi = t["data_offsets"]
        tensors[name] = np.frombuffer(blob[base + lo:base + hi],
                                      dtype=_DTYPES[t["dtype"]]).reshape(t["shape"]).copy()
    return tensors, meta


def load_file(path):
    return read_safetensors(path)[0]


def parse_arch(text):
    """The architecture string of zt_net_config_format: kind, then key=value
    pairs (in=HxWxC, actions, value=KIND:HIDDEN, ch, blocks, ...), and bare
    flags (muzero's turns, columns) as True."""
    parts = text.split()
    arch = {"kind": parts[0]}
    for p in parts[1:]:
        k, sep, v = p.partition("=")
        arch[k] = v if sep else True
    h, w, c = (int(x) for x in arch["in"].split("x"))
    vkind, vhidden = arch["value"].split(":")
    arch.update(h=h, w=w, c=c, actions=int(arch["actions"]), value_kind=vkind,
                value_hidden=int(vhidden))
    return arch


def nchw_layout(value, h, w, hwc_input=False):
    """A Zeroth tensor in PyTorch's (NCHW) layout: conv weights OHWI -> OIHW;
    with hwc_input, a dense weight whose input is an H x W x C map flattened
    (Zeroth flattens HWC, PyTorch CHW) has its columns reordered; anything
    else as it is."""
    if value.ndim == 4:
        return np.ascontiguousarray(value.transpose(0, 3, 1, 2))
    if value.ndim == 2 and hwc_input:
        out, cin = value.shape
        return np.ascontiguousarray(
            value.reshape(out, h, w, cin // (h * w)).transpose(0, 3, 1, 2).reshape(out, cin))
    return value
