"""hetkern.cumsum / cumprod against numpy with a float64 oracle: shapes, strides (negative and
zero), types, axes, directions, out= and in-place use, every error path, threads."""
import sys
import threading
import types

import numpy as np
import pytest
from conftest import DLPackOnly, DLPackOnlyProtocol, assert_scan_equal, scan_oracle
from hypothesis import given, settings
from hypothesis import strategies as st

import hetkern

TYPES = [np.float32, np.float16, np.int32, np.uint32, np.int64, np.uint64]


def random_array(rng, shape, dtype, product=False):
    if np.dtype(dtype).kind == "f":
        lo, hi = (0.5, 1.5) if product else (-4, 4)
        return rng.uniform(lo, hi, shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = (max(info.min, -3), 4) if product else (max(info.min, -1000), 1000)
    return rng.integers(lo, hi, shape, endpoint=False).astype(dtype)


@st.composite
def scan_cases(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank)))
    steps = tuple(draw(st.sampled_from([1, 2, -1, -2])) for _ in range(rank))
    return dict(
        shape=shape, steps=steps, dtype=draw(st.sampled_from(TYPES)),
        axis=draw(st.integers(-rank, rank - 1)), reverse=draw(st.booleans()),
        exclusive=draw(st.booleans()), product=draw(st.booleans()),
        broadcast=draw(st.booleans()), inplace=draw(st.booleans()),
        out_steps=tuple(draw(st.sampled_from([1, -1, 2])) for _ in range(rank)),
        seed=draw(st.integers(0, 2**31)))


def strided(rng, shape, steps, dtype, product):
    """An array of `shape` viewed through `steps` (negative: reversed) from a larger one."""
    base = random_array(rng, tuple(n * abs(s) for n, s in zip(shape, steps)), dtype, product)
    return base[tuple(slice(None, None, s) for s in steps)]


@settings(max_examples=150, deadline=None)
@given(scan_cases())
def test_scan_matches_numpy(case):
    rng = np.random.default_rng(case["seed"])
    product = case["product"]
    x = strided(rng, case["shape"], case["steps"], case["dtype"], product)
    if case["broadcast"]:  # a stride of 0 along the first dimension
        x = np.broadcast_to(x[:1], x.shape)
    before = x.copy()
    op = hetkern.cumprod if product else hetkern.cumsum
    kw = dict(axis=case["axis"], reverse=case["reverse"], exclusive=case["exclusive"])
    if case["inplace"] and not case["broadcast"]:
        y = op(x, out=x, **kw)
        assert y is x
        assert_scan_equal(x, before, product=product, **kw)
        return
    out = np.empty(tuple(n * abs(s) for n, s in zip(x.shape, case["out_steps"])), x.dtype)
    out = out[tuple(slice(None, None, s) for s in case["out_steps"])]
    y = op(x, out=out, **kw)
    assert y is out
    assert_scan_equal(out, x, product=product, **kw)
    np.testing.assert_array_equal(x, before)  # the input is never written
    assert_scan_equal(op(x, **kw), x, product=product, **kw)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_large_float32(rng, axis):
    x = rng.standard_normal((300, 2000)).astype(np.float32)
    assert_scan_equal(hetkern.cumsum(x, axis), x, axis)


def test_byte_strides_not_a_multiple_of_the_element_size(rng):
    record = np.dtype([("tag", np.uint8), ("value", np.float32)], align=False)  # 5-byte records
    x = np.zeros((6, 7), record)
    x["value"] = rng.standard_normal((6, 7))
    view = x["value"]
    assert view.strides[1] % 4 != 0
    assert_scan_equal(hetkern.cumsum(view, 1), np.ascontiguousarray(view), 1)
    out = np.zeros((6, 7), record)
    hetkern.cumsum(view, 0, out=out["value"])
    assert_scan_equal(out["value"], np.ascontiguousarray(view), 0)
    assert not out["tag"].any()  # the neighbouring bytes are untouched


def test_in_place_misaligned(rng):
    record = np.dtype([("tag", np.uint8), ("value", np.float32)], align=False)
    x = np.zeros(9, record)
    x["value"] = rng.standard_normal(9)
    before = np.array(x["value"])
    hetkern.cumsum(x["value"], out=x["value"])
    assert_scan_equal(x["value"], before, -1)


def test_staged_operands_that_share_bytes_are_refused(rng):
    # Misaligned operands are copied aside (staged) before the library sees them, so that sharing
    # bytes with another operand was accepted and the result read a stale copy.
    buf = np.zeros(4 * 12 + 3, np.uint8)
    x = np.ndarray((10,), np.float32, buf, 0)
    x[:] = rng.standard_normal(10)
    before = buf.copy()
    for offset, strides in ((2, None), (1, None), (3, (-4,))):
        out = np.ndarray((10,), np.float32, buf, offset + (36 if strides else 0), strides)
        expect_error("overlap", "output", lambda: hetkern.cumsum(x, out=out))
        np.testing.assert_array_equal(buf, before)
    # Interleaved records that share no byte stay accepted, misaligned or not.
    records = np.zeros(6, np.dtype([("tag", np.uint8), ("a", np.float32), ("b", np.float32)], align=False))
    records["a"] = rng.standard_normal(6)
    hetkern.cumsum(records["a"], out=records["b"])
    assert_scan_equal(records["b"], np.array(records["a"]), -1)


def test_outputs_whose_elements_share_bytes_are_refused_staged_or_not(rng):
    # An output staged for its byte strides used to be checked as its packed copy, and the copy
    # back wrote over itself.
    x = rng.standard_normal(4).astype(np.float32)
    buf = np.zeros(64, np.uint8)
    for strides in ((3,), (4,), (0,)):
        out = np.ndarray((4,), np.float32, buf, 0 if strides != (4,) else 1, strides)
        if strides == (4,):  # misaligned but apart: staged and accepted
            hetkern.cumsum(x, out=out)
            assert_scan_equal(np.array(out), x, -1)
            buf[:] = 0
            continue
        expect_error("invalid_stride", "output", lambda: hetkern.cumsum(x, out=out))
        assert not buf.any()


def test_views_of_one_array_that_share_no_byte(rng):
    a = rng.standard_normal((4, 8)).astype(np.float32)
    left = a[:, :4].copy()
    for axis in (0, 1):
        hetkern.cumsum(a[:, :4], axis=axis, out=a[:, 4:])
        assert_scan_equal(a[:, 4:], left, axis)
        np.testing.assert_array_equal(a[:, :4], left)
    rows = rng.integers(-50, 50, (8, 4)).astype(np.int64)
    even = rows[::2].copy()
    hetkern.cumsum(rows[::2], axis=0, out=rows[1::2])
    np.testing.assert_array_equal(rows[1::2], np.cumsum(even, axis=0))
    np.testing.assert_array_equal(rows[::2], even)
    # Blocks one column wider share a column: refused.
    expect_error("overlap", "output", lambda: hetkern.cumsum(a[:, :5], out=a[:, 3:]))


def test_other_buffer_objects():
    import array
    x = array.array("i", [1, 2, 3, 4])
    np.testing.assert_array_equal(hetkern.cumsum(x), [1, 3, 6, 10])
    np.testing.assert_array_equal(hetkern.cumsum(memoryview(x)), [1, 3, 6, 10])
    # An output seen through DLPack alone is written through its capsule.
    target = np.zeros(4, np.int32)
    out = DLPackOnlyProtocol(target)
    assert hetkern.cumsum(np.asarray(x), out=out) is out
    np.testing.assert_array_equal(target, [1, 3, 6, 10])


def test_dlpack_input_gives_a_dlpack_result(rng):
    x = rng.standard_normal((5, 9)).astype(np.float32)
    y = hetkern.cumsum(DLPackOnly(x), axis=0)
    assert hasattr(y, "__dlpack__") and not isinstance(y, np.ndarray)
    assert_scan_equal(np.from_dlpack(y), x, 0)
    out = np.zeros_like(x)
    assert hetkern.cumprod(DLPackOnly(x), out=DLPackOnly(out)).array is out
    assert_scan_equal(out, x, -1, product=True)


def test_schedules(rng):
    x = rng.standard_normal((8, 100)).astype(np.float32)
    for text in ("reference", "scan.tiled(tile=64)", hetkern.Schedule("scan.tiled(tile=16)")):
        assert_scan_equal(hetkern.cumsum(x, schedule=text), x, -1)
    chosen = hetkern.default_schedule(hetkern.cumsum, x, axis=0)
    assert isinstance(chosen, hetkern.Schedule) and chosen.params
    assert_scan_equal(hetkern.cumsum(x, 0, schedule=chosen), x, 0)
    assert str(hetkern.Schedule(str(chosen))) == str(chosen)


def expect_error(code, subject, call, cls=hetkern.Error):
    with pytest.raises(cls) as e:
        call()
    assert isinstance(e.value, ValueError)
    assert e.value.code == code and e.value.subject == subject, str(e.value)
    assert str(e.value) == f"{e.value.op}: {e.value.subject}: {e.value.rule}"
    return e.value


def test_errors_write_nothing(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    out = np.full_like(x, 7)
    cases = [
        ("invalid_parameter", "cumulative_sum", "axis", lambda: hetkern.cumsum(x, 2, out=out)),
        ("invalid_parameter", "cumulative_sum", "axis", lambda: hetkern.cumsum(x, -3, out=out)),
        ("invalid_schedule", "schedule", '"scan.tiled("', lambda: hetkern.cumsum(x, out=out, schedule="scan.tiled(")),
        ("invalid_schedule", "cumulative_sum", "no.such", lambda: hetkern.cumsum(x, out=out, schedule="no.such")),
        ("invalid_shape", "cumulative_sum", "output", lambda: hetkern.cumsum(x, out=out[:, :4])),
        ("invalid_type", "cumulative_sum", "output", lambda: hetkern.cumsum(x, out=out.astype(np.float16))),
        ("overlap", "cumulative_sum", "output", lambda: hetkern.cumsum(out[:, :4], out=out[:, 1:])),
    ]
    for code, op, subject, call in cases:
        err = expect_error(code, subject, call, hetkern.Error)
        assert err.op == op
        np.testing.assert_array_equal(out, 7)


def test_error_paths():
    expect_error("invalid_type", "input", lambda: hetkern.cumsum(np.ones(3, bool)), TypeError)
    expect_error("invalid_type", "input", lambda: hetkern.cumprod(np.ones(3, np.complex64)), TypeError)
    # Types are named as numpy names them, not by their buffer format codes.
    for array, name in ((np.ones(3, np.complex64), "complex64"), (np.ones(3, np.complex128), "complex128"),
                        (np.array(["a", "bc"]), "str"), (np.array([b"a"]), "bytes"),
                        (np.array([1, None], dtype=object), "object"),
                        (np.arange(3).astype("datetime64[s]"), "datetime64[s]"),
                        (np.arange(3).astype("timedelta64[ms]"), "timedelta64[ms]")):
        err = expect_error("invalid_type", "input", lambda: hetkern.cumsum(array), TypeError)
        assert err.rule.startswith(name + " "), err.rule
    expect_error("invalid_type", "input", lambda: hetkern.cumsum(np.ones(3, np.int16)), TypeError)
    err = expect_error("invalid_type", "input", lambda: hetkern.cumsum(np.ones(3, ">f4")), TypeError)
    assert err.rule.startswith("big-endian float32 "), err.rule
    expect_error("invalid_type", "input", lambda: hetkern.cumsum(np.ones(3, np.int8)), TypeError)
    expect_error("invalid_shape", "input", lambda: hetkern.cumsum(np.ones((0, 3), np.float32)))
    expect_error("invalid_shape", "input", lambda: hetkern.cumsum(np.ones((1,) * 9, np.float32)))
    read_only = np.ones(3, np.float32)
    read_only.setflags(write=False)
    expect_error("invalid_parameter", "output", lambda: hetkern.cumsum(read_only, out=read_only))
    # An output of a type the buffer protocol cannot describe is named by its type too.
    expect_error("invalid_type", "output",
                 lambda: hetkern.cumsum(np.ones(3, np.float32), out=np.zeros(3, "datetime64[s]")), TypeError)
    self_overlapping = np.lib.stride_tricks.as_strided(np.ones(3, np.float32), (2, 3), (0, 4))
    expect_error("invalid_stride", "output", lambda: hetkern.cumsum(np.ones((2, 3), np.float32), out=self_overlapping))
    # Values no 64-bit integer holds, and a NUL in a schedule, are the library's errors too.
    for axis in (2 ** 64, -2 ** 70):
        expect_error("invalid_parameter", "axis", lambda: hetkern.cumsum(np.ones(3, np.float32), axis=axis))
        expect_error("invalid_parameter", "axis",
                     lambda: hetkern.cumprod(np.ones(3, np.float32), axis=axis, schedule="scan.tiled"))
    expect_error("invalid_schedule", "schedule", lambda: hetkern.cumsum(np.ones(3, np.float32), schedule="scan.tiled\0"))
    # default_schedule and tune take hetkern's functions or names, not any function of that name.
    expect_error("invalid_parameter", "op", lambda: hetkern.default_schedule(np.cumsum, np.ones(3, np.float32)))
    assert str(hetkern.default_schedule("cumsum", np.ones(3, np.float32))).startswith("scan.")
    with pytest.raises(TypeError):
        hetkern.cumsum(np.ones(3, np.float32), axis=None)
    with pytest.raises(TypeError):
        hetkern.cumsum(object())
    with pytest.raises(hetkern.Error) as e:
        hetkern.Schedule("scan.tiled(tile=)")
    assert e.value.code == "invalid_schedule"


def test_threads(rng):
    inputs = [rng.standard_normal((64, 3000)).astype(np.float32) for _ in range(8)]
    wants = [scan_oracle(x, i % 2) for i, x in enumerate(inputs)]
    failures = []

    def work(i):
        for _ in range(10):
            got = hetkern.cumsum(inputs[i], i % 2)
            if not np.allclose(got, wants[i], rtol=2e-6, atol=1e-3):
                failures.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_gil_released_while_a_kernel_runs():
    """Another Python thread advances while one call runs."""
    x = np.ones((1 << 24,), np.float32)
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(1)

    counter = threading.Thread(target=count)
    counter.start()
    before = len(ticks)
    hetkern.cumsum(x, schedule="reference")
    during = len(ticks) - before
    done.set()
    counter.join()
    assert during > 0


def test_default_schedule_completes_a_given_schedule():
    x = np.ones(100, np.float32)
    s = hetkern.default_schedule(hetkern.cumsum, x, schedule="scan.parallel(threads=2)")
    assert s.strategy == "scan.parallel" and s.params["threads"] == 2 and "tile" in s.params
    with pytest.raises(hetkern.Error) as e:
        hetkern.default_schedule(hetkern.cumsum, x, schedule="bogus")
    assert e.value.code == "invalid_schedule"


def test_schedule_integers_are_canonical():
    assert hetkern.Schedule("scan.tiled(tile=01)") == hetkern.Schedule("scan.tiled(tile=1)")
    assert str(hetkern.Schedule("scan.tiled(tile=01)")) == "scan.tiled(tile=1)"


def test_an_axis_past_int_is_out_of_range():
    for axis in (2**31, -2**40):
        with pytest.raises(hetkern.Error) as e:
            hetkern.cumsum(np.ones(3, np.float32), axis=axis)
        assert e.value.code == "invalid_parameter" and "out of range" in str(e.value)


def test_masked_arrays_are_refused():
    masked = np.ma.masked_array(np.array([1, 2, 3], np.float32), mask=[0, 1, 0])
    out = np.full(3, 5, np.float32)
    with pytest.raises(TypeError, match="mask"):
        hetkern.cumsum(masked, out=out)
    np.testing.assert_array_equal(out, 5)
    with pytest.raises(TypeError, match="mask"):
        hetkern.cumprod(np.ones(3, np.float32), out=masked)
    np.testing.assert_array_equal(masked.data, [1, 2, 3])


class FakeTorchTensor:
    """Passes for a plain PyTorch tensor where the package looks (its class's module is "torch");
    its capsule is its numpy array's, through a stand-in torch.utils.dlpack.to_dlpack."""

    __module__ = "torch"

    def __init__(self, array, requires_grad=False):
        self.array = array
        self.requires_grad = requires_grad

    def is_conj(self):
        return False

    def is_neg(self):
        return False


def test_plain_torch_tensors_with_an_output_take_the_short_path(rng, monkeypatch):
    from hetkern import _arrays

    handed = []

    def to_dlpack(t):
        handed.append(t)
        return t.array.__dlpack__()

    fake = types.SimpleNamespace(utils=types.SimpleNamespace(dlpack=types.SimpleNamespace(to_dlpack=to_dlpack)))
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(_arrays, "_torch_to_dlpack", None)
    for product, op in ((False, hetkern.cumsum), (True, hetkern.cumprod)):
        x = rng.integers(-5, 6, (4, 7)).astype(np.int64)
        out = np.zeros_like(x)
        xt, outt = FakeTorchTensor(x), FakeTorchTensor(out)
        handed.clear()
        assert op(xt, 0, reverse=True, out=outt) is outt
        assert handed == [xt, outt]
        assert_scan_equal(out, x, 0, reverse=True, product=product)
    # A tensor that requires gradients is no plain tensor: the general path takes it, which (no
    # __dlpack__ here) sees an object array and refuses it, and nothing is written.
    x = np.arange(6, dtype=np.float32)
    out = np.zeros_like(x)
    with pytest.raises(hetkern.DTypeError, match="object is not a type"):
        hetkern.cumsum(FakeTorchTensor(x, requires_grad=True), out=FakeTorchTensor(out))
    assert not out.any()
