"""qlinear_matmul and pack_b."""
import numpy as np

from . import _hetkern
from ._arrays import dlpack_capsule, dtype_name, empty_like, like, new_output, refuse_masked, type_name
from ._errors import DTypeError, Error
from ._schedule import schedule_text

_OP = "quantized_linear_matmul"


class PackedB:
    """B of ``qlinear_matmul`` packed once, to pass in place of ``b`` when the same weights meet
    many inputs: for the CPU kernels from a host array, for the GPU kernels from a CUDA tensor
    (then kept on that GPU, and copied once to each other GPU a call spreads over). Immutable;
    safe to share between threads.

    Attributes: ``shape`` and ``dtype`` of B as packed, ``nbytes`` of the packed form (on each
    GPU that holds it), ``on_device`` whether it was packed from a CUDA tensor.

    >>> import numpy as np, hetkern
    >>> w = hetkern.pack_b(np.array([[1, 2], [3, 4]], np.int8))
    >>> w
    hetkern.PackedB(shape=(2, 2), dtype='int8')
    """

    __slots__ = ("_capsule", "_shape", "_dtype", "_nbytes", "_on_device")

    def __init__(self, capsule, shape, dtype, nbytes, on_device):
        self._capsule = capsule
        self._shape = shape
        self._dtype = dtype
        self._nbytes = nbytes
        self._on_device = on_device

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    nbytes = property(lambda self: self._nbytes)
    on_device = property(lambda self: self._on_device)

    def __repr__(self):
        where = ", on_device=True" if self.on_device else ""
        return f"hetkern.PackedB(shape={self.shape}, dtype={self.dtype!r}{where})"


def pack_b(b):
    """Packs ``b`` for ``qlinear_matmul``: the result replaces ``b`` in later calls and skips
    packing it each time. On the CPU: {[batch...], K, N}, int8 or uint8, rank 2 to 4, any strides.
    A CUDA tensor (one matrix {K, N}) is packed on its GPU, for calls on CUDA tensors.

    >>> import numpy as np, hetkern
    >>> a = np.array([[1, 2], [3, 4]], np.uint8)
    >>> w = hetkern.pack_b(np.array([[1, 0], [0, 1]], np.int8))
    >>> hetkern.qlinear_matmul(a, 1.0, 0, w, 1.0, 0, 1.0, 0)
    array([[1, 2],
           [3, 4]], dtype=uint8)
    """
    if not isinstance(b, np.ndarray):
        b = dlpack_capsule(b) if hasattr(b, "__dlpack__") else np.asarray(b)
    return PackedB(*_hetkern.pack_b(b))


def _host(p):
    """A parameter as a host array or a Python number."""
    if isinstance(p, np.ndarray):
        return p
    if isinstance(p, np.generic):
        return p.item()
    if type(p).__module__.partition(".")[0] == "torch":
        return p.detach().cpu().numpy()
    if hasattr(p, "__dlpack__"):
        return np.from_dlpack(p)
    return np.asarray(p)


_bool = np.bool_


def _bool_error(p, subject):
    raise TypeError(f"{_OP}: {subject}: expected a number or an array, got {type(p).__name__}")


def _scale(p, subject):
    if p is None:
        raise Error(f"{_OP}: {subject}: is required", "invalid_parameter", _OP, subject, "is required")
    if isinstance(p, int):
        if p is True or p is False:
            _bool_error(p, subject)
        try:
            return float(p)
        except OverflowError:
            digits = str(p)
            what = digits if len(digits) <= 24 else f"an integer of {len(digits)} digits"
            rule = f"{what} overflows float32 (scales are positive finite float32 numbers)"
            raise Error(f"{_OP}: {subject}: {rule}", "invalid_parameter", _OP, subject, rule) from None
    if isinstance(p, float):
        return p
    if isinstance(p, np.generic):
        if type(p) is _bool:
            _bool_error(p, subject)
        return p.item()
    given = isinstance(p, np.ndarray) or hasattr(p, "dtype")
    p = _host(p)
    if not isinstance(p, np.ndarray):
        return p
    # numpy's default float, and a list of Python ints, read as numbers are; ONNX's scales are float32
    if p.dtype == np.float64 or (not given and p.dtype.kind in "iu"):
        p = p.astype(np.float32)
    return p.item() if p.ndim == 0 else p


def _zero_point(p, dtype, subject):
    if p is None or isinstance(p, int):
        if p is True or p is False:
            _bool_error(p, subject)
        return p
    if isinstance(p, (np.generic, np.ndarray)) and p.ndim == 0:  # a typed number keeps its type,
        if type(p) is _bool:
            _bool_error(p, subject)
        return p  # which must be the tensor's; the call reads it as one value
    given = isinstance(p, np.ndarray) or hasattr(p, "dtype") or hasattr(p, "__dlpack__")
    p = _host(p)
    if not isinstance(p, np.ndarray):
        return p
    if not given and p.dtype.kind in "iu":  # a list of Python ints takes the tensor's type
        values = p
        p = values.astype(dtype)
        if (p != values).any():
            rule = f"{values.tolist()} does not fit {dtype}"
            raise Error(f"{_OP}: {subject}: {rule}", "invalid_parameter", _OP, subject, rule)
    return p


def _output_dtype(y_zero_point, out, out_dtype):
    if hasattr(y_zero_point, "dtype"):
        chosen = dtype_name(y_zero_point)
    elif not isinstance(y_zero_point, (int, float)) and hasattr(y_zero_point, "__dlpack__"):
        chosen = dtype_name(np.from_dlpack(y_zero_point))  # the protocol alone: typed all the same
    else:
        chosen = None
    if chosen is not None and chosen not in ("int8", "uint8"):
        rule = f"type {chosen} is not int8 or uint8 (it sets the output's type)"
        raise DTypeError(f"{_OP}: y_zero_point: {rule}", "invalid_type", _OP, "y_zero_point", rule)
    if out_dtype is not None:
        wanted = type_name(out_dtype)
        if chosen is not None and wanted != chosen:
            rule = f"out_dtype {wanted} differs from y_zero_point's type {chosen}"
            raise DTypeError(f"{_OP}: output: {rule}", "invalid_type", _OP, "output", rule)
        if hasattr(out, "dtype") and dtype_name(out) != wanted:
            rule = f"out_dtype {wanted} differs from out's type {dtype_name(out)}"
            raise DTypeError(f"{_OP}: output: {rule}", "invalid_type", _OP, "output", rule)
        chosen = wanted
    if chosen is None:
        chosen = dtype_name(out) if out is not None else "uint8"
    return chosen


def _matmul_shape(a_shape, b_shape):
    """numpy.matmul's result shape."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    if not a_shape or not b_shape:
        return ()
    try:
        batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ValueError:
        rule = f"batch dimensions {a_shape[:-2]} and {b_shape[:-2]} do not broadcast"
        raise Error(f"{_OP}: b: {rule}", "invalid_shape", _OP, "b", rule) from None
    return batch + a_shape[-2:-1] * (len(a_shape) > 1) + b_shape[-1:] * (len(b_shape) > 1)


def _typed_out(out):
    """A numpy view of an output that shows no dtype (buffer protocol, or DLPack on the CPU), so
    that its type is checked as an array's is."""
    if hasattr(out, "__dlpack__"):
        return _typed(out, "output")
    try:
        return np.asarray(memoryview(out))
    except TypeError:
        raise TypeError(f"{_OP}: output: expected an array (buffer protocol or DLPack), got {type(out)}") from None


def _typed(x, subject):
    """x, or a numpy view of x where it is a DLPack object on the CPU that shows no dtype (the
    protocol alone): the zero points take the operands' types. Off the CPU such an object is
    refused."""
    if hasattr(x, "dtype") or not hasattr(x, "__dlpack__"):
        return x
    if x.__dlpack_device__()[0] != 1:  # kDLCPU
        rule = "a DLPack object off the CPU needs a dtype attribute, as PyTorch's, CuPy's and JAX's arrays have"
        raise Error(f"{_OP}: {subject}: {rule}", "invalid_parameter", _OP, subject, rule)
    return np.from_dlpack(x)


# The library's names of the arguments that Python names after ONNX's QLinearMatMul.
_PYTHON_SUBJECTS = {"output_scale": "y_scale", "output_zero_point": "y_zero_point", "packed_b": "b"}


def _call(*args):
    """_hetkern.qmm(*args), its errors naming the arguments as qlinear_matmul does."""
    try:
        return _hetkern.qmm(*args)
    except Error as e:
        subject = _PYTHON_SUBJECTS.get(e.subject, e.subject)
        rule = e.rule  # "overlaps output_zero_point" names the other argument too
        for library_name in ("output_scale", "output_zero_point"):
            rule = rule.replace(library_name, _PYTHON_SUBJECTS[library_name])
        if subject == e.subject and rule == e.rule:
            raise
        raise type(e)(f"{e.op}: {subject}: {rule}", e.code, e.op, subject, rule) from None


def _qmm(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, out, out_dtype,
         schedule, mode):
    given_a = a
    a, b, given_out = _typed(a, "a"), _typed(b, "b"), out
    a_by_protocol = a is not given_a  # _typed read A through DLPack alone: the result takes its kind
    if out is not None and not hasattr(out, "dtype"):
        out = _typed_out(out)
    if not (type(a) is np.ndarray and type(b) is np.ndarray and (out is None or type(out) is np.ndarray)):
        for x, subject in ((a, "a"), (b, "b"), (out, "output")):
            refuse_masked(x, _OP, subject)
    dtype = _output_dtype(y_zero_point, out, out_dtype)
    host = isinstance(a, np.ndarray) or not hasattr(a, "__dlpack__")
    if host and not isinstance(a, np.ndarray):
        a = np.asarray(a)
    packed = isinstance(b, PackedB)
    if not packed and not isinstance(b, np.ndarray) and not hasattr(b, "__dlpack__"):
        b = np.asarray(b)
    a_dtype, b_dtype = dtype_name(a), b.dtype if packed else dtype_name(b)
    # The operands' and the output's types before the zero points, which take them: a list of
    # Python ints reads as int64, which a zero point of 0 would otherwise be blamed for.
    for subject, name in (("a", a_dtype), ("b", b_dtype), ("output", dtype)):
        if name not in ("int8", "uint8"):
            rule = f"type {name} is not int8 or uint8"
            raise DTypeError(f"{_OP}: {subject}: {rule}", "invalid_type", _OP, subject, rule)
    params = (_scale(a_scale, "a_scale"), _zero_point(a_zero_point, a_dtype, "a_zero_point"),
              _scale(b_scale, "b_scale"), _zero_point(b_zero_point, b_dtype, "b_zero_point"),
              _scale(y_scale, "y_scale"), _zero_point(y_zero_point, dtype, "y_zero_point"))
    schedule = schedule_text(schedule, _OP)
    if out is not None and (len(a.shape) == 1 or len(b.shape) == 1):
        # The library sees promoted operands: its message would give their ranks, not these.
        want = _matmul_shape(a.shape, b.shape)
        if tuple(out.shape) != want:
            rule = f"shape {tuple(out.shape)} differs from the result's {want}"
            raise Error(f"{_OP}: output: {rule}", "invalid_shape", _OP, "output", rule)
    if host:
        b_arg = b._capsule if packed else dlpack_capsule(b) if not isinstance(b, np.ndarray) else b
        made = given_out is None
        if made:
            given_out = out = np.empty(_matmul_shape(a.shape, b.shape), dtype)
        elif out is not given_out and hasattr(given_out, "__dlpack__"):
            out = dlpack_capsule(given_out)  # DLPack alone: written through its capsule, not the read-only view
        chosen = _call(a, params[0], params[1], b_arg, *params[2:], out, schedule, mode)
        if mode:
            return chosen
        if made and a_by_protocol:  # a result of A's kind, as cumsum's
            return like(given_a, given_out.__dlpack__())
        return given_out
    a_arg = dlpack_capsule(a)
    b_arg = b._capsule if packed else dlpack_capsule(b)
    if out is None and not mode:
        out = new_output(a, _matmul_shape(a.shape, b.shape), dtype)
    result = empty_like(a_arg, _matmul_shape(a.shape, b.shape), dtype) if out is None else dlpack_capsule(out)
    chosen = _call(a_arg, params[0], params[1], b_arg, *params[2:], result, schedule, mode)
    if mode:
        return chosen
    return given_out if given_out is not None else out if out is not None else like(a, result)


def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, *,
                   out=None, out_dtype=None, schedule=None):
    """ONNX QLinearMatMul: ``y = saturate(round((a - a_zero_point) @ (b - b_zero_point) *
    a_scale * b_scale / y_scale) + y_zero_point)``, with exact integer accumulation and
    round-half-to-even (docs/operators.md has the exact rule).

    a: {..., M, K} and b: {..., K, N}, int8 or uint8, or b from ``hetkern.pack_b``; batch
    dimensions broadcast and 1-D operands are promoted as in ``numpy.matmul``. numpy arrays or
    ``__dlpack__`` objects (PyTorch CPU or CUDA tensors; CUDA runs on the GPU).
    Scales (float32, positive) and zero points (a's, b's and the output's type) are Python
    numbers or arrays: per tensor (one value), per row of a and y (M values, as ONNX's 1-D
    arrays or {M, 1}), per column of b (N values).
    The output type is ``y_zero_point``'s when it is an array or a numpy scalar, else
    ``out_dtype``, else out's, else uint8 (ONNX's default). out: an array to write into;
    nothing is written on error. schedule: a ``hetkern.Schedule`` or its text (e.g.
    ``"qmm.tiled"``), None to let hetkern choose.

    >>> import numpy as np, hetkern
    >>> a = np.array([[10, 20], [30, 40]], np.uint8)
    >>> b = np.array([[1, 2], [3, 4]], np.int8)
    >>> hetkern.qlinear_matmul(a, 0.5, 10, b, 1.0, 0, 1.0, 5)
    array([[20, 25],
           [60, 85]], dtype=uint8)
    >>> hetkern.qlinear_matmul(a, [0.5, 0.25], [10, 20], b, 1.0, 0, 2.0, np.int8(0))
    array([[ 8, 10],
           [ 9, 12]], dtype=int8)
    """
    return _qmm(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, out,
                out_dtype, schedule, 0)


def default_qmm_schedule(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, *,
                         out=None, out_dtype=None, schedule=None):
    return _qmm(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point, out,
                out_dtype, schedule, 1)
