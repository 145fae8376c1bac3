"""Zeroth from Python: vectorised games, networks, batched search and
training runs over libzeroth, Zeroth's C library (docs/python.md).

    import zeroth
    g = zeroth.Games("connect4", batch=4096)
    g.step(zeroth.random_actions(g.legal_mask()))
    net = zeroth.Net.load("runs/c4")
    out = zeroth.Search(g.game, net, trees=4096, sims=32)(g.states)
"""
import atexit
import ctypes
import logging

import numpy as np

from ._lib import (CHANCE, TERMINAL, CorruptError, InvalidError, NotFoundError,
                   UnsupportedError, ZerothError, ZerothIOError, ZerothMemoryError, LOG_FN,
                   check, lib)
from .games import Game, Games, list_games
from .nets import Net, parse_architecture
from .runs import Run, config_text, default_config
from .search import (Greedy, RecurrentModel, RecurrentOutput, RootOutput, Search,
                     SearchOutput)

__version__ = lib.zeroth_version().decode()


def backends():
    """The network backends built in, fastest first (["cpu", "ref"])."""
    return lib.zeroth_backends().decode().split()


def _kth_bit_table():
    """For each byte b and k < popcount(b), at 8 * b + k: the position of b's
    k-th set bit; and each byte's popcount."""
    table = np.zeros(256 * 8, np.int32)
    for b in range(256):
        bits = [i for i in range(8) if b >> i & 1]
        table[8 * b: 8 * b + len(bits)] = bits
    counts = np.array([bin(b).count("1") for b in range(256)], np.float64)
    return table, counts


_KTH_BIT, _POPCOUNT = _kth_bit_table()
_BIT_WEIGHTS = (1 << np.arange(8)).astype(np.uint8)  # the sum of a row's bits fits a byte


def random_actions(mask, rng=None):
    """One uniformly random legal action per row of a bool (n, A) mask
    (int32 (n,)); rows without a legal action get 0."""
    rng = np.random.default_rng() if rng is None else rng
    m = np.asarray(mask)
    if m.ndim != 2:
        raise InvalidError(f"mask has shape {m.shape}, expected (n, num_actions)")
    if m.shape[1] <= 8:
        # One byte of legal bits per row, then the k-th set bit by table
        # lookup, all 1-D (numpy's per-row argmax over a short axis costs
        # more); k = floor(u * count) < count in float64.
        bits = m.astype(np.bool_, copy=False).view(np.uint8) @ _BIT_WEIGHTS[: m.shape[1]]
        k = rng.random(m.shape[0]) * _POPCOUNT[bits]
        return _KTH_BIT[bits.astype(np.intp) * 8 + k.astype(np.intp)]
    u = rng.random(m.shape, dtype=np.float32)
    u *= m
    return np.argmax(u, axis=1).astype(np.int32)


_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR}
_LEVEL_NAMES = {"debug": 0, "info": 1, "warn": 2, "warning": 2, "error": 3, "quiet": 4}
_log_callback = None


def set_log_level(level):
    """Drops library log messages below `level`: "debug", "info" (the
    default), "warn", "error" or "quiet"."""
    if isinstance(level, str):
        if level.lower() not in _LEVEL_NAMES:
            raise InvalidError(f"unknown log level '{level}' (known: {', '.join(_LEVEL_NAMES)})")
        level = _LEVEL_NAMES[level.lower()]
    check(lib.zeroth_set_log_level(int(level)))


def log_to_python(enable=True):
    """Sends the library's log messages (training progress, checkpoints)
    to the Python logger "zeroth" instead of stderr; enable=False goes back
    to stderr. Messages from a run's own threads arrive on those threads."""
    global _log_callback
    if not enable:
        lib.zeroth_set_log_callback(LOG_FN(), None)
        return
    logger = logging.getLogger("zeroth")

    def on_log(user, level, message):
        try:
            logger.log(_LEVELS.get(level, logging.INFO), message.decode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 -- a logging failure must not reach C
            pass

    cb = LOG_FN(on_log)
    lib.zeroth_set_log_callback(cb, None)
    if _log_callback is None:
        # Runs still open at exit log while they close: to stderr by then,
        # not into an interpreter that is shutting down.
        atexit.register(lib.zeroth_set_log_callback, LOG_FN(), None)
    _log_callback = cb  # the library keeps the pointer: keep the function alive


__all__ = [
    "Game", "Games", "list_games", "Net", "parse_architecture", "Search", "SearchOutput", "Greedy",
    "RecurrentModel", "RootOutput", "RecurrentOutput",
    "Run", "default_config", "config_text", "backends", "random_actions", "set_log_level",
    "log_to_python", "ZerothError", "InvalidError", "NotFoundError", "ZerothIOError",
    "CorruptError", "ZerothMemoryError", "UnsupportedError", "CHANCE", "TERMINAL",
]
del ctypes
