"""hetkern.qlinear_matmul against exact integer arithmetic with the spec's requantization: every
signedness combination and parameter granularity, numpy.matmul broadcasting, pack_b, errors."""
import itertools
import threading

import numpy as np
import pytest
from conftest import DLPackOnly, DLPackOnlyProtocol, requantize_reference

import hetkern

INT8S = [np.int8, np.uint8]


def random_int8(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def params(rng, granularity, count, dtype):
    """Power-of-two scales (so the reference is bit-exact) and zero points of `dtype`."""
    n = count if granularity else 1
    scales = np.exp2(rng.integers(-6, 2, n)).astype(np.float32)
    zps = random_int8(rng, n, dtype)
    if not granularity:
        return float(scales[0]), int(zps[0])
    return scales, zps


def col(v):
    return np.reshape(v, (-1, 1))


def row(v):
    return np.reshape(v, (1, -1))


@pytest.mark.parametrize("ta,tb,ty", list(itertools.product(INT8S, INT8S, INT8S)))
@pytest.mark.parametrize("per_row,per_col,per_out", [(False, False, False), (True, True, True),
                                                      (True, False, False), (False, True, True)])
def test_matches_exact_reference(ta, tb, ty, per_row, per_col, per_out):
    rng = np.random.default_rng([INT8S.index(ta), INT8S.index(tb), INT8S.index(ty), per_row, per_col, per_out])
    m, k, n = 13, 37, 11
    a, b = random_int8(rng, (m, k), ta), random_int8(rng, (k, n), tb)
    sa, za = params(rng, per_row, m, ta)
    sb, zb = params(rng, per_col, n, tb)
    sy, zy = params(rng, per_out, m, ty)
    sy = sy * 64  # keeps most outputs inside the type's range (saturation is still reached)
    zy_arg = zy if per_out else np.array(zy, ty)  # an array y_zero_point decides the output type
    if per_row and ta == np.int8:  # per-row parameters as {M,1} as well as ONNX's 1-D form
        sa, za = col(sa), col(za)
    y = hetkern.qlinear_matmul(a, sa, za, b, sb, zb, sy, zy_arg)
    want = requantize_reference(a, col(sa), col(za), b, row(sb), row(zb), col(sy), col(zy), ty)
    assert y.dtype == ty
    np.testing.assert_array_equal(y, want)


def test_spec_case_with_other_scales():
    a = np.array([[208, 236, 0, 238], [3, 214, 255, 29]], np.uint8)
    b = np.array([[152, 51, 244], [60, 26, 255], [0, 127, 246], [127, 254, 247]], np.uint8)
    y = hetkern.qlinear_matmul(a, 0.0066, 113, b, 0.00705, 114, 0.0107, 118)
    want = requantize_reference(a, 0.0066, 113, b, 0.00705, 114, 0.0107, 118, np.uint8)
    np.testing.assert_array_equal(y, want)


def test_lists_of_numbers_as_scales():
    """A list of Python ints is a list of numbers, as a single int is; a typed integer array is not."""
    rng = np.random.default_rng(7)
    a, b = random_int8(rng, (3, 5), np.uint8), random_int8(rng, (5, 2), np.int8)
    want = hetkern.qlinear_matmul(a, 0.5, 1, b, np.array([2, 4], np.float32), 0, 64, 3)
    np.testing.assert_array_equal(hetkern.qlinear_matmul(a, 0.5, 1, b, [2, 4], 0, 64, 3), want)
    np.testing.assert_array_equal(hetkern.qlinear_matmul(a, 0.5, 1, b, (2.0, 4), 0, 64, 3), want)
    with pytest.raises(TypeError):
        hetkern.qlinear_matmul(a, 0.5, 1, b, np.array([2, 4]), 0, 64, 3)


@pytest.mark.parametrize("a_shape,b_shape", [
    ((2, 3, 5, 7), (7, 4)), ((5, 7), (3, 7, 4)), ((2, 1, 5, 7), (3, 7, 4)), ((7,), (7, 4)),
    ((5, 7), (7,)), ((3, 5, 7), (7,)), ((7,), (2, 7, 4))])
def test_matmul_broadcasting(rng, a_shape, b_shape):
    a, b = random_int8(rng, a_shape, np.uint8), random_int8(rng, b_shape, np.int8)
    y = hetkern.qlinear_matmul(a, 0.25, 7, b, 0.5, -3, 8.0, np.uint8(100))
    acc = np.matmul(a.astype(np.int64) - 7, b.astype(np.int64) + 3)
    want = np.clip(np.rint(acc * np.float64(np.float32(0.25 * 0.5) / np.float32(8.0))) + 100, 0, 255)
    assert y.shape == acc.shape
    np.testing.assert_array_equal(y, want.astype(np.uint8))
    # An out of another shape is named by numpy's shapes, not the promoted operands' ranks.
    out = np.full(acc.shape + (1,), 9, np.uint8)
    with pytest.raises(hetkern.Error) as e:
        hetkern.qlinear_matmul(a, 0.25, 7, b, 0.5, -3, 8.0, np.uint8(100), out=out)
    assert e.value.code == "invalid_shape" and e.value.subject == "output", str(e.value)
    if len(a_shape) == 1 or len(b_shape) == 1:
        assert f"differs from the result's {acc.shape}" in str(e.value)
    assert (out == 9).all()


def test_typed_numbers_and_zero_dim_parameters(rng):
    """numpy scalars and 0-d arrays are one value per tensor, as Python numbers are; a typed zero
    point keeps its type, which must be its tensor's."""
    a, b = random_int8(rng, (9, 70), np.uint8), random_int8(rng, (70, 5), np.int8)
    want = requantize_reference(a, 0.5, 3, b, 0.25, -2, 16.0, 100, np.uint8)
    for za, zb, zy in ((3, -2, 100), (np.uint8(3), np.int8(-2), np.uint8(100)),
                       (np.array(3, np.uint8), np.array(-2, np.int8), np.array(100, np.uint8))):
        for sa, sb, sy in ((0.5, 0.25, 16.0), (np.float32(0.5), np.float64(0.25), np.float32(16)),
                           (np.array(0.5, np.float32), np.array(0.25, np.float32), np.array(16, np.float32))):
            np.testing.assert_array_equal(hetkern.qlinear_matmul(a, sa, za, b, sb, zb, sy, zy), want)
    with pytest.raises(hetkern.DTypeError):
        hetkern.qlinear_matmul(a, 0.5, np.array(3, np.int8), b, 0.25, -2, 16.0, 100)
    with pytest.raises(hetkern.DTypeError):
        hetkern.qlinear_matmul(a, 0.5, 3, b, 0.25, np.uint8(2), 16.0, 100)


def test_strides_out_and_pack_b(rng):
    a = random_int8(rng, (40, 30), np.int8)[::-2, ::3]  # negative and gapped strides
    b = random_int8(rng, (30, 24), np.uint8).T.copy().T[::3, ::-2]
    za = random_int8(rng, 20, np.int8)[::-1]
    want = requantize_reference(a, 0.5, za.reshape(-1, 1), b, 0.25, 5, 16.0, 3, np.int8)
    out = np.zeros((20, 12), np.int8)[::-1]
    assert hetkern.qlinear_matmul(a, 0.5, za, b, 0.25, 5, 16.0, 3, out=out) is out
    np.testing.assert_array_equal(out, want)
    packed = hetkern.pack_b(b)
    assert packed.shape == b.shape and packed.dtype == "uint8" and packed.nbytes > 0
    y = hetkern.qlinear_matmul(a, 0.5, za, packed, 0.25, 5, 16.0, 3, out_dtype=np.int8)
    np.testing.assert_array_equal(y, want)
    y = hetkern.qlinear_matmul(DLPackOnly(np.ascontiguousarray(a)), 0.5, za, DLPackOnly(b), 0.25, 5, 16.0, 3,
                               out_dtype="int8")
    np.testing.assert_array_equal(np.from_dlpack(y), want)
    for text in ("reference", hetkern.default_schedule(hetkern.qlinear_matmul, a, 0.5, za, b, 0.25, 5, 16.0,
                                                       np.int8(3))):
        y = hetkern.qlinear_matmul(a, 0.5, za, b, 0.25, 5, 16.0, np.int8(3), schedule=text)
        np.testing.assert_array_equal(y, want)


def test_packed_b_with_operands_that_walk_backwards(rng):
    """A packed B keeps its order, so a reversed along K and an output reversed along N or a
    batch dimension are copied around the call, not flipped (which reversed B's order too)."""
    a, b = random_int8(rng, (3, 2, 7), np.uint8), random_int8(rng, (3, 7, 5), np.int8)
    packed = hetkern.pack_b(b)
    a_rev = np.ascontiguousarray(a[:, :, ::-1])[:, :, ::-1]  # a's values, K walked backwards
    want = np.stack([requantize_reference(a[t], 0.5, 3, b[t], 0.25, 0, 4.0, 1, np.uint8) for t in range(3)])
    np.testing.assert_array_equal(hetkern.qlinear_matmul(a_rev, 0.5, 3, packed, 0.25, 0, 4.0, 1), want)
    for view in (lambda o: o[:, :, ::-1], lambda o: o[::-1], lambda o: o[::-1, ::-1, ::-1]):
        out = np.zeros((3, 2, 5), np.uint8)
        hetkern.qlinear_matmul(a, 0.5, 3, packed, 0.25, 0, 4.0, 1, out=view(out))
        np.testing.assert_array_equal(view(out), want)


def test_packed_b_with_an_output_whose_elements_share_bytes(rng):
    # With a packed B an output walking backwards along N is staged; a layout whose elements share
    # bytes was checked as the staged copy and accepted, and the copy back wrote over itself.
    a, b = random_int8(rng, (5, 2), np.uint8), random_int8(rng, (2, 3), np.int8)
    buf = np.zeros(64, np.uint8)
    out = np.lib.stride_tricks.as_strided(buf[10:], (5, 3), (1, -1))
    with pytest.raises(hetkern.Error) as e:
        hetkern.qlinear_matmul(a, 1.0, 0, hetkern.pack_b(b), 1.0, 0, 1.0, 0, out=out)
    assert e.value.code == "invalid_stride" and e.value.subject == "output", str(e.value)
    assert not buf.any()


def test_column_blocks_of_one_array_as_operand_and_output(rng):
    m = np.zeros((4, 6), np.uint8)
    m[:, :3] = random_int8(rng, (4, 3), np.uint8)
    b = random_int8(rng, (3, 3), np.int8)
    want = requantize_reference(m[:, :3].copy(), 0.5, 3, b, 0.25, 0, 4.0, 1, np.uint8)
    hetkern.qlinear_matmul(m[:, :3], 0.5, 3, b, 0.25, 0, 4.0, 1, out=m[:, 3:])
    np.testing.assert_array_equal(m[:, 3:], want)


def test_dlpack_only_operands_on_the_cpu():
    a, b = np.array([[1, 2], [3, 4]], np.uint8), np.array([[1, 0], [0, 1]], np.int8)
    y = hetkern.qlinear_matmul(DLPackOnlyProtocol(a), 1.0, 0, DLPackOnlyProtocol(b), 1.0, 0, 1.0, 0)
    # The result is of A's kind, as cumsum's: read through DLPack, not a numpy array.
    assert hasattr(y, "__dlpack__") and not isinstance(y, np.ndarray)
    np.testing.assert_array_equal(np.from_dlpack(y), a)
    # Zero points seen through the protocol alone keep their own type, as typed arrays do: an int8
    # output zero point makes an int8 output, and b's int8 -3 is read as -3.
    y = hetkern.qlinear_matmul(a, 1.0, DLPackOnlyProtocol(np.array([1], np.uint8)), b, 1.0,
                               DLPackOnlyProtocol(np.array([-3, -3], np.int8)), 1.0,
                               DLPackOnlyProtocol(np.array([-5], np.int8)))
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, requantize_reference(a, 1.0, 1, b, 1.0, -3, 1.0, -5, np.int8))


def test_outputs_without_a_dtype():
    import array
    a, b = np.array([[10, 20], [30, 40]], np.uint8), np.array([[1, 2], [3, 4]], np.int8)
    want = requantize_reference(a, 1.0, 0, b, 1.0, 0, 2.0, 0, np.uint8)
    out = memoryview(bytearray(4)).cast("B", (2, 2))
    assert hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 2.0, 0, out=out) is out
    np.testing.assert_array_equal(np.asarray(out), want)
    row = array.array("B", bytes(2))  # one-dimensional: a's first row times b
    assert hetkern.qlinear_matmul(a[0], 1.0, 0, b, 1.0, 0, 2.0, 0, out=row) is row
    np.testing.assert_array_equal(np.asarray(row), want[0])
    # Its type is checked as an array's: an int8 buffer is not a uint8 output.
    signed = memoryview(bytearray(4)).cast("b", (2, 2))
    with pytest.raises(hetkern.DTypeError):
        hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 2.0, 0, out=signed, out_dtype="uint8")
    assert not any(signed.tobytes())
    hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 2.0, 0, out=signed, out_dtype="i1")
    np.testing.assert_array_equal(np.asarray(signed), requantize_reference(a, 1.0, 0, b, 1.0, 0, 2.0, 0, np.int8))
    with pytest.raises(TypeError, match="expected an array"):
        hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 2.0, 0, out=[[0, 0], [0, 0]])
    # Seen through DLPack alone: typed by its capsule, written through it.
    target = np.zeros((2, 2), np.uint8)
    seen = DLPackOnlyProtocol(target)
    assert hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 2.0, 0, out=seen) is seen
    np.testing.assert_array_equal(target, want)
    with pytest.raises(hetkern.DTypeError):
        hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 2.0, 0, out=DLPackOnlyProtocol(target.view(np.int8)),
                               out_dtype="uint8")


def test_masked_arrays_and_bools_are_refused():
    a, b = np.array([[10, 20], [30, 40]], np.uint8), np.array([[1, 2], [3, 4]], np.int8)
    out = np.full((2, 2), 77, np.uint8)
    for args in ((np.ma.masked_array(a, [[0, 1], [0, 0]]), 1.0, 0, b), (a, 1.0, 0, np.ma.masked_array(b)),
                 (a, True, 0, b), (a, 1.0, np.False_, b)):
        with pytest.raises(TypeError):
            hetkern.qlinear_matmul(*args, 1.0, 0, 1.0, 0, out=out)
    with pytest.raises(TypeError):
        hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, 0, out=np.ma.masked_array(out))
    np.testing.assert_array_equal(out, 77)


def test_packed_b_is_immutable():
    w = hetkern.pack_b(np.ones((2, 3), np.int8))
    for name, value in (("shape", (9, 9)), ("dtype", "uint8"), ("nbytes", 1), ("on_device", True)):
        with pytest.raises(AttributeError):
            setattr(w, name, value)
    assert w.shape == (2, 3) and w.dtype == "int8"


def test_default_schedule_completes_a_given_schedule(rng):
    a, b = random_int8(rng, (4, 64), np.uint8), random_int8(rng, (64, 32), np.int8)
    s = hetkern.default_schedule(hetkern.qlinear_matmul, a, 1.0, 0, b, 1.0, 0, 1.0, 0, schedule="qmm.tiled(kc=64)")
    assert s.strategy == "qmm.tiled" and s.params["kc"] == 64 and "mc" in s.params
    with pytest.raises(hetkern.Error) as e:
        hetkern.default_schedule(hetkern.qlinear_matmul, a, 1.0, 0, b, 1.0, 0, 1.0, 0, schedule="scan.tiled")
    assert e.value.code == "invalid_schedule"


def test_threads(rng):
    a = random_int8(rng, (64, 256), np.uint8)
    packed_source = random_int8(rng, (256, 96), np.int8)
    packed = hetkern.pack_b(packed_source)
    want = requantize_reference(a, 0.125, 3, packed_source, 0.25, 0, 32.0, 1, np.uint8)
    failures = []

    def work():
        for _ in range(20):
            if not np.array_equal(hetkern.qlinear_matmul(a, 0.125, 3, packed, 0.25, 0, 32.0, 1), want):
                failures.append(1)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_errors_write_nothing(rng):
    a, b = random_int8(rng, (4, 6), np.uint8), random_int8(rng, (6, 5), np.int8)
    out = np.full((4, 5), 77, np.uint8)
    cases = [
        ("invalid_shape", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b[:5], 1.0, 0, 1.0, 0, out=out)),
        ("invalid_parameter", lambda: hetkern.qlinear_matmul(a, -1.0, 0, b, 1.0, 0, 1.0, 0, out=out)),
        ("invalid_parameter", lambda: hetkern.qlinear_matmul(a, float("nan"), 0, b, 1.0, 0, 1.0, 0, out=out)),
        ("invalid_parameter", lambda: hetkern.qlinear_matmul(a, 10 ** 400, 0, b, 1.0, 0, 1.0, 0, out=out)),
        ("invalid_schedule", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, 0, out=out, schedule="qmm\0")),
        ("invalid_parameter", lambda: hetkern.qlinear_matmul(a, 1.0, 300, b, 1.0, 0, 1.0, 0, out=out)),
        ("invalid_parameter", lambda: hetkern.qlinear_matmul(a, 1.0, [1, 2, 3, 400], b, 1.0, 0, 1.0, 0, out=out)),
        ("invalid_type", lambda: hetkern.qlinear_matmul(a, 1.0, np.int8(0), b, 1.0, 0, 1.0, 0, out=out)),
        ("invalid_type", lambda: hetkern.qlinear_matmul(a.astype(np.int32), 1.0, 0, b, 1.0, 0, 1.0, 0, out=out)),
        ("invalid_type", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, np.int8(0), out=out)),
        ("invalid_type", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, np.int8(0), out_dtype="uint8")),
        ("invalid_shape", lambda: hetkern.qlinear_matmul(a, np.ones(3, np.float32), 0, b, 1.0, 0, 1.0, 0, out=out)),
        ("invalid_shape", lambda: hetkern.qlinear_matmul(np.ones((2, 4, 6), np.uint8), 1.0, 0,
                                                         np.ones((3, 6, 5), np.int8), 1.0, 0, 1.0, 0)),
        ("invalid_schedule", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, 0, out=out,
                                                            schedule="scan.tiled")),
        ("invalid_parameter", lambda: hetkern.qlinear_matmul(a, None, 0, b, 1.0, 0, 1.0, 0, out=out)),
        ("invalid_parameter", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, 2**70, out=out)),
        ("invalid_type", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, 0, out=out, out_dtype=np.int8)),
    ]
    for subject, call in (("a", lambda: hetkern.qlinear_matmul([[1, 2]], 1.0, 0, b[:2], 1.0, 0, 1.0, 0)),
                          ("output", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, 0, out_dtype=np.int32))):
        with pytest.raises(hetkern.DTypeError) as e:
            call()
        assert e.value.subject == subject and "is not int8 or uint8" in str(e.value)
    # A Python number float32 cannot hold is named as given, not as the 0 or inf it became.
    for scale, words in ((1e-50, "1e-50 rounds to 0 as a float32"), (1e300, "1e+300 overflows float32")):
        with pytest.raises(hetkern.Error, match=words.replace("+", r"\+")):
            hetkern.qlinear_matmul(a, 1.0, 0, b, scale, 0, 1.0, 0, out=out)
    for code, call in cases:
        with pytest.raises(hetkern.Error) as e:
            call()
        assert e.value.code == code, str(e.value)
        if code == "invalid_type":
            assert isinstance(e.value, TypeError)
        np.testing.assert_array_equal(out, 77)
    with pytest.raises(hetkern.Error):
        hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, 0, out=out[:, :4].T.copy().T[:, :4])
    np.testing.assert_array_equal(out, 77)
    # An operand walking backwards is staged (copied aside): its overlap with the output is still
    # seen, in the caller's memory.
    shared = np.ones((4, 8), np.uint8)
    with pytest.raises(hetkern.Error) as e:
        hetkern.qlinear_matmul(shared[:, ::-1], 1.0, 0, b[:, :4].repeat(2, 0)[:8], 1.0, 0, 1.0, 0,
                               out=shared[::-1, :4])
    assert e.value.code == "overlap" and e.value.subject == "output", str(e.value)
    np.testing.assert_array_equal(shared, 1)
    # So is a parameter array's, copied aside for walking backwards or for its alignment.
    y = np.full((4, 5), 7, np.uint8)
    for subject, args in (("y_zero_point", (1.0, 0, 1.0, y[::-1, 0])),
                          ("b_zero_point", (1.0, y[0, ::-1].view(np.int8), 1.0, 0)),
                          ("y_scale", (1.0, 0, np.frombuffer(y.data, np.float32, 4, 1), 0))):
        with pytest.raises(hetkern.Error) as e:
            hetkern.qlinear_matmul(a, 1.0, 0, b, *args, out=y)
        assert e.value.code == "overlap" and subject in str(e.value), str(e.value)
        np.testing.assert_array_equal(y, 7)
    # The output's parameters are named as qlinear_matmul names them, whichever layer refuses them.
    for subject, call in (("y_scale", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 0.0, 0, out=out)),
                          ("y_scale", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, np.ones(3, np.float32), 0,
                                                                     out=out)),
                          ("y_zero_point", lambda: hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0,
                                                                          np.zeros(3, np.uint8), out=out))):
        with pytest.raises(hetkern.Error) as e:
            call()
        assert e.value.subject == subject and str(e.value).startswith(f"quantized_linear_matmul: {subject}: ")
        np.testing.assert_array_equal(out, 77)
    # and where the library's rule names one.
    zy = out.reshape(-1)[:1]
    with pytest.raises(hetkern.Error) as e:
        hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, zy, out=out)
    assert e.value.code == "overlap" and "overlaps y_zero_point" in e.value.rule, str(e.value)
    np.testing.assert_array_equal(out, 77)
    # A 1-D per-row parameter of the wrong length is described in the shape it was given, not as
    # the {M,1} column the library takes.
    for subject, call in (("a_scale", lambda: hetkern.qlinear_matmul(a, np.ones(3, np.float32), 0, b, 1.0, 0, 1.0, 0,
                                                                     out=out)),
                          ("a_zero_point", lambda: hetkern.qlinear_matmul(a, 1.0, np.zeros(5, np.uint8), b, 1.0, 0,
                                                                          1.0, 0, out=out))):
        with pytest.raises(hetkern.Error) as e:
            call()
        assert (e.value.code, e.value.subject) == ("invalid_shape", subject)
        assert "per-row (M,) or (M, 1) with M = 4" in str(e.value) and "{" not in str(e.value), str(e.value)
        np.testing.assert_array_equal(out, 77)
