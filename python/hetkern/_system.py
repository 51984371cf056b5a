"""What hetkern is and where it runs: info, devices, default_schedule, tune, transfer counters."""
import math
import numbers
import operator

import numpy as np

from . import _hetkern, _qmm, _scan
from ._arrays import type_name
from ._errors import Error
from ._schedule import Schedule

_OPS = {
    "cumsum": "cumulative_sum", "cumulative_sum": "cumulative_sum",
    "cumprod": "cumulative_product", "cumulative_product": "cumulative_product",
    "qlinear_matmul": "quantized_linear_matmul", "quantized_linear_matmul": "quantized_linear_matmul",
}


def _op_name(op):
    # A name, or one of hetkern's own functions: another function of the same name (numpy.cumsum)
    # is not hetkern's.
    if isinstance(op, str) and op in _OPS:
        return _OPS[op]
    for function, name in ((_scan.cumsum, "cumulative_sum"), (_scan.cumprod, "cumulative_product"),
                           (_qmm.qlinear_matmul, "quantized_linear_matmul")):
        if op is function:
            return name
    if isinstance(op, str):
        what = repr(op)
    else:
        what = f"{getattr(op, '__module__', '?')}.{getattr(op, '__name__', repr(op))}"
    rule = f"{what} is not hetkern's cumsum, cumprod or qlinear_matmul"
    raise Error(f"hetkern: op: {rule}", "invalid_parameter", "hetkern", "op", rule)


def info():
    """This build of hetkern and the machine it found, as a dict: ``version``, ``compiler``,
    ``offload`` (built with GPU offload), ``openmp``, ``isa`` (the CPU kernels' instruction-set
    level) and ``detected_isa``, ``cpu_features``, ``default_threads``, ``cores``, ``pus``,
    ``numa_nodes``, ``tuning_db`` (the database path; empty: none) and ``fingerprint``.

    >>> import hetkern
    >>> d = hetkern.info()
    >>> d["isa"] in ("portable", "avx2", "avx512", "avx512_vnni", "amx")
    True
    """
    return _hetkern.info()


def devices():
    """Where hetkern runs: a list of dicts, the CPU first (``kind`` "cpu", ``isa``, ``threads``)
    and, in a build with GPU offload that found a GPU, ``kind`` "cuda" with its
    ``openmp_device`` (the CUDA device whose tensors run there) and ``team_memory_bytes`` (what
    one kernel team may have: 48 KB where hetkern's launch shim is not the CUDA driver, docs/gpu.md).

    >>> import hetkern
    >>> hetkern.devices()[0]["kind"]
    'cpu'
    """
    return _hetkern.devices()


def default_schedule(op, *args, **kwargs):
    """The schedule a call ``op(*args, **kwargs)`` would run now, every parameter explicit,
    without running it: a ``schedule=`` given, its defaults for the call filled in, else
    HETKERN_SCHEDULE's, the tuning database's or the heuristic's. op:
    ``hetkern.cumsum``, ``hetkern.cumprod`` or ``hetkern.qlinear_matmul`` (or their names).
    Validates the arguments as the call does.

    >>> import numpy as np, hetkern
    >>> s = hetkern.default_schedule(hetkern.cumsum, np.ones((64, 64), np.float32), axis=0)
    >>> s.strategy.startswith("scan.")
    True
    """
    name = _op_name(op)
    if name == "quantized_linear_matmul":
        return Schedule(_qmm.default_qmm_schedule(*args, **kwargs))
    return Schedule(_scan.default_scan_schedule(name == "cumulative_product", *args, **kwargs))


def tune(op, shapes, budget=8.0, *, dtype=None, axis=-1, reverse=False, exclusive=False,
         exhaustive=False):
    """Measures schedules for each shape and stores the winners in the tuning database that the
    command line's ``hetkern tune`` uses ($HETKERN_TUNING_DB, else the user's cache); later calls
    of that shape on this machine run them. Returns one dict per shape (``schedule``,
    ``median_ns``, ``default_ns``: the heuristic's time, ``candidates``, ``stored``).

    op: ``hetkern.cumsum``, ``hetkern.cumprod`` or ``hetkern.qlinear_matmul`` (or a name).
    shapes: one shape or a list of them; for qlinear_matmul (M, N, K).
    budget: seconds per shape, finite and above 0. dtype: the scans' type (float32 by default);
    for qlinear_matmul the types of (a, b, output), ("uint8", "int8", "uint8") by default; names
    or numpy types. axis, reverse, exclusive: the scans' call, as in ``hetkern.cumsum``.
    exhaustive: time every candidate of the space in full, whatever the budget (a sweep),
    rather than searching it within the budget.

    >>> import hetkern
    >>> r = hetkern.tune(hetkern.cumsum, (8, 256), budget=0.2)[0]  # doctest: +SKIP
    >>> r["schedule"]  # doctest: +SKIP
    'scan.tiled(...)'
    """
    name = _op_name(op)
    if dtype is None:
        types = ("uint8", "int8", "uint8") if name == "quantized_linear_matmul" else ("float32",)
    else:
        types = tuple(type_name(t) for t in (dtype if isinstance(dtype, (tuple, list)) else (dtype,)))
    shapes = shapes.tolist() if isinstance(shapes, np.ndarray) else list(shapes)
    if shapes and not any(hasattr(n, "__iter__") for n in shapes):  # one shape
        shapes = [shapes]
    shapes = [tuple(operator.index(n) for n in s) for s in shapes]  # TypeError for a float size
    # Checked here, so that the error names this function's argument (the library's is budget_seconds).
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Real):
        raise TypeError(f"tune: budget: expected a number of seconds, got {type(budget).__name__}")
    seconds = float(budget)
    if not math.isfinite(seconds) or seconds <= 0:
        rule = f"must be a finite number of seconds above 0, got {budget!r}"
        raise Error(f"tune: budget: {rule}", "invalid_parameter", "tune", "budget", rule)
    budget = seconds
    return [_hetkern.tune(name, types, s, axis, reverse, exclusive, budget, exhaustive) for s in shapes]


def transfer_counters(reset=False):
    """Bytes and copies hetkern moved between host and GPU memory, and between GPUs, since the
    last reset, as a dict (``to_device_bytes``, ``to_host_bytes``, ``to_device_copies``,
    ``to_host_copies``, ``between_devices_bytes``, ``between_devices_copies``); a call on CUDA
    tensors moves none but its quantization parameters, unless it is spread over several GPUs. reset: zero them after
    reading. All zero in builds without offload.

    >>> import hetkern
    >>> sorted(hetkern.transfer_counters())
    ['between_devices_bytes', 'between_devices_copies', 'to_device_bytes', 'to_device_copies', 'to_host_bytes', 'to_host_copies']
    """
    return _hetkern.transfer_counters(reset)
