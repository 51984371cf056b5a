"""Arrays in and out: numpy through the buffer protocol, everything else through DLPack."""
import sys

import numpy as np

from . import _hetkern


def dlpack_capsule(x):
    """x's DLPack capsule, asked for without a stream: before its kernels start, hetkern waits for
    all the work on the CUDA context, whichever stream the producer queued it on. (PyTorch orders
    streams for __dlpack__(stream=...) in Python, at a cost that small calls feel:
    docs/performance.md.) A plain PyTorch tensor's capsule comes from torch_capsule; __dlpack__
    still refuses what it refuses (tensors that require gradients, conjugate or negative views)."""
    capsule = torch_capsule(x)
    return x.__dlpack__() if capsule is None else capsule


_torch_to_dlpack = None


def torch_capsule(x):
    """A plain PyTorch tensor's capsule from torch.utils.dlpack, which skips __dlpack__'s stream
    bookkeeping; None for anything else, and for the tensors that __dlpack__ refuses."""
    global _torch_to_dlpack
    if type(x).__module__ != "torch" or x.requires_grad or x.is_conj() or x.is_neg():
        return None
    if _torch_to_dlpack is None:
        _torch_to_dlpack = sys.modules["torch"].utils.dlpack.to_dlpack
    return _torch_to_dlpack(x)


def new_output(x, shape, dtype):
    """A new tensor for a result, from x's own library where hetkern knows how to ask it (PyTorch:
    torch.empty, through its caching allocator, on x's device), else None. shape and dtype (a
    name) of None take x's; a name PyTorch does not know gives None too, so that the call reports
    it."""
    if type(x).__module__.partition(".")[0] != "torch":
        return None
    torch = sys.modules["torch"]
    torch_dtype = x.dtype if dtype is None else getattr(torch, dtype, None)
    if not isinstance(torch_dtype, torch.dtype):
        return None
    return torch.empty(x.shape if shape is None else shape, dtype=torch_dtype, device=x.device)


class DLPackResult:
    """A result produced for a DLPack input whose library hetkern cannot call: pass it to that
    library's ``from_dlpack`` (it has ``__dlpack__`` and ``__dlpack_device__``)."""

    __slots__ = ("_capsule", "_device")

    def __init__(self, capsule, device):
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, stream=None):
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise BufferError("hetkern.DLPackResult: the capsule was already taken")
        return capsule

    def __dlpack_device__(self):
        return self._device


def like(x, capsule):
    """The result `capsule` (for inputs whose library new_output cannot ask) as the same kind of
    object as x: through the library's from_dlpack where it has one, else a DLPackResult."""
    library = sys.modules.get(type(x).__module__.partition(".")[0])
    from_dlpack = getattr(library, "from_dlpack", None)
    result = DLPackResult(capsule, x.__dlpack_device__())
    return from_dlpack(result) if from_dlpack is not None else result


_DTYPE_NAMES = {}


def dtype_name(x):
    """'float32', 'uint8', ... for numpy arrays, torch tensors and array-API arrays. Names are
    kept per dtype object: numpy forms str(dtype) in Python, about 2 us, which small calls felt
    four times over (docs/performance.md)."""
    dtype = x.dtype
    try:
        return _DTYPE_NAMES[dtype]
    except (KeyError, TypeError):  # TypeError: a dtype object that is not hashable
        name = str(dtype).rpartition(".")[2]
    if len(_DTYPE_NAMES) < 64:
        try:
            _DTYPE_NAMES[dtype] = name
        except TypeError:
            pass
    return name


def type_name(t):
    """'uint8' for 'uint8', 'u1', numpy.uint8, numpy.dtype('uint8') and torch.uint8; a name numpy
    does not know ('bfloat16') as given."""
    try:
        return np.dtype(t).name
    except TypeError:
        return t if isinstance(t, str) else str(t).rpartition(".")[2]


MaskedArray = np.ma.MaskedArray


def refuse_masked(x, op, subject):
    """Raises TypeError for a numpy masked array, whose mask the kernels would not see."""
    if isinstance(x, MaskedArray):
        raise TypeError(f"{op}: {subject}: a masked array's mask would be ignored; pass its "
                        ".filled(value) or its .data")


def empty_like(capsule, shape=None, dtype=None):
    """A new packed tensor on capsule's device, as a capsule."""
    return _hetkern.empty(capsule, shape, dtype)
