"""Networks: a trained net loaded from a run directory, a checkpoint
directory or a weights file; its forward pass on Zeroth's backends; its
tensors as numpy arrays; and the equivalent torch.nn.Module."""
import ctypes
import os
import weakref

import numpy as np

from . import _arrays
from ._lib import InvalidError, check, lib, string, text


def _settings(**kw):
    return " ".join(f"{k}={v}" for k, v in kw.items() if v is not None)


def parse_architecture(arch):
    """The one-line architecture string ("resnet in=6x7x2 actions=7
    value=scalar:64 ch=64 blocks=5 pol=2 valc=1") as a dict with the sizes
    as ints: kind, h, w, c, actions, value_kind, value_hidden, and ch,
    blocks, pol, valc (resnet) or width, layers, norm (mlp)."""
    parts = arch.split()
    a = {"kind": parts[0]}
    for p in parts[1:]:
        k, _, v = p.partition("=")
        a[k] = v
    a["h"], a["w"], a["c"] = (int(x) for x in a.pop("in").split("x"))
    a["value_kind"], hidden = a.pop("value").split(":")
    a["value_hidden"] = int(hidden)
    for k in ("actions", "ch", "blocks", "pol", "valc", "width", "layers"):
        if k in a:
            a[k] = int(a[k])
    return a


class Net:
    """A trained network and the game it plays.

        net = zeroth.Net.load("runs/c4")        # or a ckpt dir, or a .safetensors
        logits, value = net.forward(obs)        # (n, A) float32, (n,) float32

    backend: auto | cpu | ref; precision: auto | fp32 | bf16 | int8; threads: the
    threads one forward call may use (default: all cores)."""

    def __init__(self, path, backend=None, precision=None, threads=None):
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise InvalidError(f"threads = {threads!r}, must be an int >= 1")
        h = ctypes.c_void_p()
        settings = _settings(backend=backend, precision=precision, threads=threads)
        check(lib.zeroth_net_open(text(path, "path"), text(settings, "net settings"),
                                  ctypes.byref(h)))
        self._h = h
        self._searches = weakref.WeakSet()  # open searches over this net (Search adds itself)
        self.path = path
        #: the spec of the game the net plays (zeroth.Game takes it)
        self.game_spec = string(lib.zeroth_net_game_spec(h))
        self.architecture = string(lib.zeroth_net_architecture(h))
        self.backend = string(lib.zeroth_net_backend(h))
        self.precision = string(lib.zeroth_net_precision(h))
        self.num_actions = lib.zeroth_net_num_actions(h)
        self.obs_size = lib.zeroth_net_obs_size(h)
        a = parse_architecture(self.architecture)
        self.obs_shape = (a["h"], a["w"], a["c"])

    load = classmethod(lambda cls, path, **kw: cls(path, **kw))
    load.__doc__ = "Net.load(path, backend=, precision=, threads=): the same as Net(path, ...)."

    def close(self):
        """Frees the net now; refused while a Search over it is open."""
        open_searches = [s for s in getattr(self, "_searches", ()) if getattr(s, "_h", None)]
        if open_searches:
            raise InvalidError(f"the net is used by {len(open_searches)} open search(es); "
                               "close them first")
        self._free()

    def _free(self):
        h = getattr(self, "_h", None)
        if h:
            lib.zeroth_net_free(h)
            self._h = None

    def __del__(self):
        # Searches hold a reference to their net, so none is left by now.
        self._free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"zeroth.Net({self.path!r}: {self.architecture}, {self.backend}/{self.precision})"

    def _handle(self):
        if not self._h:
            raise InvalidError("the net is closed")
        return self._h

    def forward(self, obs):
        """obs: float32 (n, H, W, C) or (n, obs_size), n >= 1 (one position
        (H, W, C) is taken as n = 1) -> (policy logits (n, num_actions),
        raw for every action; value (n,) in [-1, 1] for the player to move)."""
        o = np.asarray(obs)
        if o.shape in (self.obs_shape, (self.obs_size,)):
            o = o[None]
        if (o.ndim not in (2, 4) or o.shape[0] < 1 or o.shape[1:] not in
                (self.obs_shape, (self.obs_size,))):
            h, w, c = self.obs_shape
            raise InvalidError(f"obs has shape {o.shape}, expected (n, {h}, {w}, {c}) or "
                               f"(n, {self.obs_size}) with n >= 1")
        o = _arrays.floats(o, o.shape, "obs")
        n = o.shape[0]
        if n > 2**31 - 1:
            raise InvalidError(f"{n} observations are too many for one call")
        logits = np.empty((n, self.num_actions), np.float32)
        value = np.empty(n, np.float32)
        check(lib.zeroth_net_forward(self._handle(), n, o.ctypes.data, logits.ctypes.data,
                                     value.ctypes.data))
        return logits, value

    __call__ = forward

    # ---- tensors ----

    def tensor_names(self):
        h = self._handle()
        names = []
        for i in range(lib.zeroth_net_tensor_count(h)):
            name = ctypes.c_char_p()
            check(lib.zeroth_net_tensor_info(h, i, ctypes.byref(name), None, None, None))
            names.append(name.value.decode())
        return names

    def tensors(self):
        """{name: float32 array} of every tensor, as the weight file holds
        them (docs/networks.md: PyTorch's names, conv weights OHWI, dense
        weights [out][in] with `in` in HWC order); copies, in file order."""
        h = self._handle()
        out = {}
        for i in range(lib.zeroth_net_tensor_count(h)):
            name, ndim = ctypes.c_char_p(), ctypes.c_int()
            shape, count = (ctypes.c_int * 4)(), ctypes.c_size_t()
            check(lib.zeroth_net_tensor_info(h, i, ctypes.byref(name), ctypes.byref(ndim), shape,
                                             ctypes.byref(count)))
            a = np.empty(tuple(shape[: ndim.value]), np.float32)
            check(lib.zeroth_net_tensor_read(h, i, a.ctypes.data, count.value))
            out[name.value.decode()] = a
        return out

    def to_torch(self):
        """The equivalent torch.nn.Module (PyTorch must be installed), in
        eval mode, taking NHWC observations like forward() and returning
        (logits, value) with the same values: see zeroth.torch_net."""
        from .torch_net import build

        return build(self.architecture, self.tensors())


__all__ = ["Net", "parse_architecture"]
