"""Checks of the arrays handed to the library: dtype, shape and layout,
refused with one-line exceptions before any C code sees them, and never
copied when they already have the layout the library wants."""
import numpy as np

from ._lib import InvalidError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _shape_text(shape):
    return "(" + ", ".join("n" if d is None else str(d) for d in shape) + ")"


def check_shape(a, shape, what):
    """shape: a tuple of ints, None meaning any size."""
    if a.ndim != len(shape) or any(w is not None and d != w for d, w in zip(a.shape, shape)):
        raise InvalidError(f"{what} has shape {a.shape}, expected {_shape_text(shape)}")


def floats(x, shape, what):
    """A C-contiguous float32 array of `shape` (None: any size). Floating
    arrays of another precision are converted (a copy); integer, bool,
    complex and object arrays are refused."""
    a = np.asarray(x)
    if a.dtype.kind != "f":
        if a.dtype.kind in "iub" and not isinstance(x, np.ndarray):
            a = a.astype(np.float32)  # a Python list of numbers
        else:
            raise TypeError(f"{what} must be a float array, not {a.dtype}")
    check_shape(a, shape, what)
    return np.asarray(a, dtype=np.float32, order="C")


def ints(x, shape, what):
    """A C-contiguous int32 array of `shape`. Other integer dtypes are
    converted when every value fits; floats and bools are refused."""
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be an integer array, not {a.dtype}")
    check_shape(a, shape, what)
    if a.dtype != np.int32:
        if a.size and (a.min() < INT32_MIN or a.max() > INT32_MAX):
            raise InvalidError(f"{what} holds values outside the int32 range")
        a = a.astype(np.int32)
    return np.asarray(a, order="C")


def states(x, state_size, what="states", writable=False):
    """A C-contiguous uint8 array of shape (n, state_size), the layout of the
    library's state arrays; never converted (a state is bytes, not numbers).
    writable: the call changes the states in place, so the array must be
    the caller's own (no copy may be made)."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{what} must be a numpy uint8 array, not {type(x).__name__}")
    if x.dtype != np.uint8:
        raise TypeError(f"{what} must be a uint8 array of state bytes, not {x.dtype}")
    check_shape(x, (None, state_size), what)
    if x.shape[0] > INT32_MAX:
        raise InvalidError(f"{what} holds {x.shape[0]} states, more than one call takes")
    if writable:
        if not x.flags.c_contiguous:
            raise InvalidError(f"{what} must be C-contiguous to be changed in place")
        if not x.flags.writeable:
            raise InvalidError(f"{what} is read-only")
        return x
    return np.ascontiguousarray(x)


def tree_list(trees, num_trees, what="trees"):
    """None (the first n trees) or an int32 array of tree indices."""
    if trees is None:
        return None
    t = ints(np.atleast_1d(trees), (None,), what)
    if t.size and (t.min() < 0 or t.max() >= num_trees):
        bad = int(t[(t < 0) | (t >= num_trees)][0])
        raise InvalidError(f"{what[:-1]} {bad} does not exist ({num_trees} {what})")
    return t


def ptr(a):
    """The address of an array's data for a ctypes call (None for empty)."""
    return a.ctypes.data if a is not None and a.size else None
