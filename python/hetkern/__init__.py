"""hetkern: cumulative sums and products and ONNX's QLinearMatMul on numpy arrays and on
DLPack tensors (PyTorch on the CPU and on CUDA), with schedules chosen per shape and machine.

>>> import numpy as np, hetkern
>>> hetkern.cumsum(np.arange(6, dtype=np.float32).reshape(2, 3), axis=0)
array([[0., 1., 2.],
       [3., 5., 7.]], dtype=float32)

The calls release the GIL while their kernels run, and may be made from several threads at once.
Errors are hetkern.Error (a ValueError); unsupported types hetkern.DTypeError (also a TypeError).
"""
from . import _hetkern
from ._errors import DTypeError, Error
from ._qmm import PackedB, pack_b, qlinear_matmul
from ._scan import cumprod, cumsum
from ._schedule import Schedule
from ._system import default_schedule, devices, info, transfer_counters, tune

_hetkern.set_error_classes(Error, DTypeError)

__all__ = [
    "cumsum", "cumprod", "qlinear_matmul", "pack_b", "PackedB", "Schedule", "default_schedule",
    "tune", "info", "devices", "transfer_counters", "Error", "DTypeError",
]
