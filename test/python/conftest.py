"""Shared helpers of the hetkern Python tests: oracles and a DLPack-only array wrapper."""
import atexit
import os
import shutil
import tempfile

import numpy as np
import pytest

# The tests' calls use a tuning database of their own, never the user's (~/.cache/hetkern): on a
# GPU machine, large calls on host tensors measure the machine's rates and store them.
if not os.environ.get("HETKERN_TUNING_DB"):
    _db_dir = tempfile.mkdtemp(prefix="hetkern-pytests-")
    atexit.register(shutil.rmtree, _db_dir, True)
    os.environ["HETKERN_TUNING_DB"] = os.path.join(_db_dir, "tuning.sqlite")


def scan_oracle(x, axis, reverse=False, exclusive=False, product=False):
    """numpy's scan with the spec's accumulation: float32 in float64, float16 in float32,
    integers wrapping in their own type."""
    acc = {np.dtype(np.float32): np.float64, np.dtype(np.float16): np.float32}.get(x.dtype, x.dtype)
    y = np.asarray(x, acc)
    if reverse:
        y = np.flip(y, axis)
    with np.errstate(over="ignore"):
        r = (np.cumprod if product else np.cumsum)(y, axis=axis, dtype=acc)
    if exclusive:
        r = np.roll(r, 1, axis=axis)
        index = [slice(None)] * r.ndim
        index[axis] = 0
        r[tuple(index)] = 1 if product else 0
    if reverse:
        r = np.flip(r, axis)
    return r.astype(x.dtype)


def assert_scan_equal(got, x, axis, reverse=False, exclusive=False, product=False):
    want = scan_oracle(x, axis, reverse, exclusive, product)
    assert got.shape == x.shape and got.dtype == x.dtype
    if x.dtype.kind == "f":
        rtol = 2e-3 if x.dtype == np.float16 else 2e-6
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol,
                                   atol=rtol * float(np.max(np.abs(want), initial=1.0)))
    else:
        np.testing.assert_array_equal(got, want)


def requantize_reference(a, sa, za, b, sb, zb, sy, zy, out_dtype):
    """The spec's QuantizedLinearMatMul on 2-D operands: exact integer products, the canonical
    multiplier, round half to even, zero point, saturation. Parameters are numbers or arrays
    broadcastable to {M,1} (A, output) and {1,N} (B)."""
    acc = (a.astype(np.int64) - np.asarray(za, np.int64)) @ (b.astype(np.int64) - np.asarray(zb, np.int64))
    mult = (np.asarray(sa, np.float32) * np.asarray(sb, np.float32)).astype(np.float32)
    mult = (mult / np.asarray(sy, np.float32)).astype(np.float32)
    y = np.rint(acc * mult.astype(np.float64)) + np.asarray(zy, np.int64)
    info = np.iinfo(out_dtype)
    return np.clip(y, info.min, info.max).astype(out_dtype)


class DLPackOnly:
    """An array seen only through __dlpack__ / __dlpack_device__ (as a PyTorch tensor is)."""

    def __init__(self, array):
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class DLPackOnlyProtocol:
    """An array seen through __dlpack__ / __dlpack_device__ and nothing else: no dtype, no shape,
    no buffer protocol."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
