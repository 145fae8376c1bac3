"""The ctypes layer over libzeroth.so: loading the library, the prototypes of
include/zeroth/zeroth.h, and statuses turned into exceptions.

Nothing else in the package calls the library except through `lib` and
`check`. Every call releases the GIL (ctypes.CDLL), so long calls (a search,
a training step) let other Python threads run.
"""
import ctypes
import os

c_int_p = ctypes.POINTER(ctypes.c_int)
c_size_p = ctypes.POINTER(ctypes.c_size_t)
c_char_pp = ctypes.POINTER(ctypes.c_char_p)
vp = ctypes.c_void_p

# zeroth_status values and ZEROTH_CHANCE / ZEROTH_TERMINAL.
OK, ERR_INVALID, ERR_NOT_FOUND, ERR_IO, ERR_CORRUPT, ERR_NOMEM, ERR_UNSUPPORTED = range(7)
CHANCE = -1
TERMINAL = -2


class ZerothError(Exception):
    """A failure reported by libzeroth (or refused by the binding before the
    call): `status` is the zeroth_status name, str(e) Zeroth's one-line
    message naming the problem."""

    status = "error"

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidError(ZerothError, ValueError):
    """A bad argument: wrong shape, illegal action, malformed setting."""

    status = "invalid"


class NotFoundError(ZerothError, LookupError):
    """An unknown name or a missing file."""

    status = "not found"


class ZerothIOError(ZerothError, OSError):
    """A read or a write failed."""

    status = "io"


class CorruptError(ZerothError):
    """A file is truncated or inconsistent."""

    status = "corrupt"


class ZerothMemoryError(ZerothError, MemoryError):
    status = "out of memory"


class UnsupportedError(ZerothError):
    """Valid, but not in this build or not now (a second training run)."""

    status = "unsupported"


_ERRORS = {
    ERR_INVALID: InvalidError,
    ERR_NOT_FOUND: NotFoundError,
    ERR_IO: ZerothIOError,
    ERR_CORRUPT: CorruptError,
    ERR_NOMEM: ZerothMemoryError,
    ERR_UNSUPPORTED: UnsupportedError,
}


def _library_path():
    """ZEROTH_LIBRARY if set (a libzeroth.so built elsewhere), else the copy
    the wheel put beside this file."""
    env = os.environ.get("ZEROTH_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libzeroth.so")


def _load():
    path = _library_path()
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"zeroth: cannot load libzeroth from {path} ({e}); reinstall with "
            "`pip install ./python` from the repository, or set ZEROTH_LIBRARY"
        ) from None


lib = _load()


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


st = ctypes.c_int  # zeroth_status
_proto("zeroth_version", ctypes.c_char_p)
_proto("zeroth_backends", ctypes.c_char_p)
_proto("zeroth_last_error", ctypes.c_char_p)
_proto("zeroth_status_name", ctypes.c_char_p, st)
_proto("zeroth_fail", st, st, ctypes.c_char_p)
LOG_FN = ctypes.CFUNCTYPE(None, vp, ctypes.c_int, ctypes.c_char_p)
_proto("zeroth_set_log_callback", None, LOG_FN, vp)
_proto("zeroth_set_log_level", st, ctypes.c_int)

# games
_proto("zeroth_game_list", ctypes.c_char_p, ctypes.c_int)
_proto("zeroth_game_new", st, ctypes.c_char_p, ctypes.POINTER(vp))
_proto("zeroth_game_free", None, vp)
_proto("zeroth_game_spec", ctypes.c_char_p, vp)
_proto("zeroth_game_name", ctypes.c_char_p, vp)
_proto("zeroth_game_state_size", ctypes.c_size_t, vp)
_proto("zeroth_game_num_actions", ctypes.c_int, vp)
_proto("zeroth_game_obs_shape", ctypes.c_int, vp, c_int_p)
_proto("zeroth_game_max_chance_outcomes", ctypes.c_int, vp)
_proto("zeroth_game_max_length", ctypes.c_int, vp)
_proto("zeroth_game_max_return", ctypes.c_float, vp)
_proto("zeroth_game_reset", st, vp, ctypes.c_int, vp)
_proto("zeroth_game_players", st, vp, ctypes.c_int, vp, vp)
_proto("zeroth_game_legal", st, vp, ctypes.c_int, vp, vp, vp)
_proto("zeroth_game_step", st, vp, ctypes.c_int, vp, vp)
_proto("zeroth_game_observe", st, vp, ctypes.c_int, vp, vp)
_proto("zeroth_game_returns", st, vp, ctypes.c_int, vp, vp)
_proto("zeroth_game_chance_outcomes", st, vp, ctypes.c_int, vp, vp, vp, vp)
_proto("zeroth_game_sample_chance", st, vp, ctypes.c_int, vp, ctypes.c_uint64)
_proto("zeroth_game_step_env", st, vp, ctypes.c_int, vp, vp, ctypes.c_uint64, ctypes.c_int, vp, vp,
       vp, vp)
_proto("zeroth_game_step_env_random", st, vp, ctypes.c_int, vp, ctypes.c_uint64, ctypes.c_int, vp,
       vp, vp, vp, vp)
_proto("zeroth_game_to_text", st, vp, vp, ctypes.c_char_p, ctypes.c_size_t)
_proto("zeroth_game_from_text", st, vp, ctypes.c_char_p, vp)
_proto("zeroth_game_render", st, vp, vp, ctypes.c_char_p, ctypes.c_size_t)
_proto("zeroth_game_action_to_text", st, vp, vp, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
_proto("zeroth_game_action_from_text", st, vp, vp, ctypes.c_char_p, c_int_p)

# nets
_proto("zeroth_net_open", st, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp))
_proto("zeroth_net_free", None, vp)
_proto("zeroth_net_game_spec", ctypes.c_char_p, vp)
_proto("zeroth_net_architecture", ctypes.c_char_p, vp)
_proto("zeroth_net_backend", ctypes.c_char_p, vp)
_proto("zeroth_net_precision", ctypes.c_char_p, vp)
_proto("zeroth_net_num_actions", ctypes.c_int, vp)
_proto("zeroth_net_obs_size", ctypes.c_int, vp)
_proto("zeroth_net_forward", st, vp, ctypes.c_int, vp, vp, vp)
_proto("zeroth_net_tensor_count", ctypes.c_int, vp)
_proto("zeroth_net_tensor_info", st, vp, ctypes.c_int, c_char_pp, c_int_p, c_int_p, c_size_p)
_proto("zeroth_net_tensor_read", st, vp, ctypes.c_int, vp, ctypes.c_size_t)

# searches
EVAL_OBS_FN = ctypes.CFUNCTYPE(st, vp, ctypes.c_int, vp, vp, vp)
_proto("zeroth_search_new", st, vp, vp, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(vp))
_proto("zeroth_search_new_callbacks", st, vp, EVAL_OBS_FN, vp, vp, ctypes.c_int,
       ctypes.c_char_p, ctypes.POINTER(vp))
ROOT_FN = ctypes.CFUNCTYPE(st, vp, ctypes.c_int, vp, vp, vp, vp, vp)
RECURRENT_FN = ctypes.CFUNCTYPE(st, vp, ctypes.c_int, vp, vp, vp, vp, vp, vp, vp)
_proto("zeroth_search_new_recurrent", st, vp, ctypes.c_size_t, ROOT_FN, RECURRENT_FN, vp,
       ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(vp))
_proto("zeroth_greedy_new", st, vp, vp, ctypes.c_int, ctypes.c_int, ctypes.POINTER(vp))
_proto("zeroth_greedy_free", None, vp)
_proto("zeroth_greedy_choose", st, vp, ctypes.c_int, vp, vp, vp, vp)
_proto("zeroth_search_free", None, vp)
_proto("zeroth_search_num_trees", ctypes.c_int, vp)
_proto("zeroth_search_begin", st, vp, ctypes.c_int, vp, vp)
_proto("zeroth_search_run", st, vp)
_proto("zeroth_search_choose", st, vp, ctypes.c_int, vp, ctypes.c_float, vp)
_proto("zeroth_search_policy", st, vp, ctypes.c_int, vp, vp)
_proto("zeroth_search_visits", st, vp, ctypes.c_int, vp, vp)
_proto("zeroth_search_root_value", st, vp, ctypes.c_int, vp, vp)
_proto("zeroth_search_played", st, vp, ctypes.c_int, vp, vp)
_proto("zeroth_search_forget", st, vp, ctypes.c_int, vp)

# runs
_proto("zeroth_run_new", st, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp))
_proto("zeroth_run_resume", st, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp))
_proto("zeroth_run_step", st, vp, ctypes.c_int64, ctypes.c_double, c_int_p)
_proto("zeroth_run_request_stop", None, vp)
_proto("zeroth_run_metric", st, vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double))
_proto("zeroth_run_dir", ctypes.c_char_p, vp)
_proto("zeroth_run_close", st, vp)


def last_error():
    return lib.zeroth_last_error().decode("utf-8", "replace")


def error_for(status, message=None):
    """The exception for a failed call's status (message: the library's)."""
    cls = _ERRORS.get(status, ZerothError)
    if message is None:
        message = last_error()
    return cls(message)


def check(status):
    """Raises the exception for a failed call."""
    if status != OK:
        raise error_for(status)


def text(s, what):
    """A str argument as the bytes the library takes; refuses NUL and
    non-str values."""
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a str, not {type(s).__name__}")
    if "\0" in s:
        raise InvalidError(f"{what} contains a NUL character")
    return s.encode("utf-8")


def string(b):
    return b.decode("utf-8", "replace") if b is not None else None
