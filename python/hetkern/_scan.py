"""cumsum and cumprod."""
import numpy as np

from . import _hetkern
from ._arrays import dlpack_capsule, empty_like, like, new_output, refuse_masked, torch_capsule
from ._schedule import schedule_text

_run = _hetkern.cumulative
_ndarray = np.ndarray


def _scan(product, x, axis, reverse, exclusive, out, schedule, mode):
    op = "cumulative_product" if product else "cumulative_sum"
    schedule = schedule_text(schedule, op)
    refuse_masked(x, op, "input")
    refuse_masked(out, op, "output")
    if not isinstance(x, _ndarray):
        if hasattr(x, "__dlpack__"):
            return _scan_dlpack(product, x, axis, reverse, exclusive, out, schedule, mode)
        x = np.asarray(x)
    if out is None:
        out = np.empty(x.shape, x.dtype)
    # An output seen through DLPack alone (no buffer protocol) is written through its capsule.
    plain = isinstance(out, _ndarray) or not hasattr(out, "__dlpack__")
    chosen = _run(product, x, out if plain else dlpack_capsule(out), axis, reverse, exclusive, schedule, mode)
    return out if mode == 0 else chosen


def _run_torch(product, x, out, axis, reverse, exclusive):
    """The call on plain PyTorch tensors given an output, without the general path's checks for
    other kinds of input (which small calls on the GPU feel); False where x or out is no such
    tensor, and nothing was run."""
    capsule = torch_capsule(x)
    if capsule is None:
        return False
    result = torch_capsule(out)
    if result is None:
        return False
    _run(product, capsule, result, axis, reverse, exclusive, None, 0)
    return True


def _scan_dlpack(product, x, axis, reverse, exclusive, out, schedule, mode):
    capsule = dlpack_capsule(x)
    if out is None and not mode:
        out = new_output(x, None, None)
    result = empty_like(capsule) if out is None else dlpack_capsule(out)
    chosen = _run(product, capsule, result, axis, reverse, exclusive, schedule, mode)
    if mode:
        return chosen
    return out if out is not None else like(x, result)


def cumsum(x, axis=-1, *, reverse=False, exclusive=False, out=None, schedule=None):
    """Running sum along ``axis``: ``y[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...]``.

    x: a numpy array or any object with ``__dlpack__`` (PyTorch tensors on the CPU or CUDA,
    CuPy, JAX). Types: float32 (accumulated in float64), float16 and bfloat16 (accumulated
    in float32), float64 (double-double), int32, uint32, int64, uint64 (wrapping).
    axis: the scanned dimension; negative counts from the end.
    reverse: scan from the last element to the first (``y[i] = x[i] + ... + x[n-1]``).
    exclusive: leave each element out of its own tally (``y[0]`` is 0).
    out: an array of x's shape and type to write into (``out=x`` works in place); nothing is
    written when the call raises.
    schedule: a ``hetkern.Schedule`` or its text, e.g. ``"scan.parallel(threads=2)"``; None lets
    the library choose (tuning database, then its heuristic).

    Returns ``out``, or a new array of the same kind as x (numpy for numpy, torch for torch).
    Any strides are used without copies, negative and zero ones included; byte strides that are
    not a multiple of the element size are copied once. Raises hetkern.Error for bad input and
    hetkern.DTypeError (a TypeError) for an unsupported type.

    >>> import numpy as np, hetkern
    >>> hetkern.cumsum(np.array([[1, 2, 3], [4, 5, 6]], np.float32))
    array([[ 1.,  3.,  6.],
           [ 4.,  9., 15.]], dtype=float32)
    >>> hetkern.cumsum(np.arange(1, 5, dtype=np.int32), exclusive=True, reverse=True)
    array([9, 7, 4, 0], dtype=int32)
    """
    # The common case (numpy arrays, no schedule) inline, as in cumprod: one Python call less
    # per call than going through _scan, which the per-call overhead shows.
    if type(x) is _ndarray and schedule is None and (out is None or type(out) is _ndarray):
        if out is None:
            out = np.empty(x.shape, x.dtype)
        _run(False, x, out, axis, reverse, exclusive, None, 0)
        return out
    if schedule is None and out is not None and _run_torch(False, x, out, axis, reverse, exclusive):
        return out
    return _scan(False, x, axis, reverse, exclusive, out, schedule, 0)


def cumprod(x, axis=-1, *, reverse=False, exclusive=False, out=None, schedule=None):
    """Running product along ``axis``; arguments, types and results as ``hetkern.cumsum``.

    >>> import numpy as np, hetkern
    >>> hetkern.cumprod(np.array([1, 2, 3, 4], np.int64))
    array([ 1,  2,  6, 24])
    >>> hetkern.cumprod(np.array([1, 2, 3, 4], np.int64), exclusive=True)
    array([1, 1, 2, 6])
    """
    if type(x) is _ndarray and schedule is None and (out is None or type(out) is _ndarray):
        if out is None:
            out = np.empty(x.shape, x.dtype)
        _run(True, x, out, axis, reverse, exclusive, None, 0)
        return out
    if schedule is None and out is not None and _run_torch(True, x, out, axis, reverse, exclusive):
        return out
    return _scan(True, x, axis, reverse, exclusive, out, schedule, 0)


def default_scan_schedule(product, x, axis=-1, *, reverse=False, exclusive=False, out=None, schedule=None):
    return _scan(product, x, axis, reverse, exclusive, out, schedule, 1)
