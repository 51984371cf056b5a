"""Arrays in and out: numpy through the buffer protocol, everything else through DLPack."""
import sys

from . import _hetkern

# DLPack device types whose memory only the GPU reads.
_CUDA_DEVICES = (2, 13)  # kDLCUDA, kDLCUDAManaged


def dlpack_capsule(x):
    """x's DLPack capsule. A CUDA producer is asked to make the legacy default stream (1) wait
    for its own stream; hetkern waits for that stream before its kernels start."""
    device = x.__dlpack_device__()
    if device[0] in _CUDA_DEVICES:
        return x.__dlpack__(stream=1)
    return x.__dlpack__()


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
    """The result `capsule` as the same kind of object as x: a torch.Tensor for a torch.Tensor
    (torch.from_dlpack reads the capsule itself), through the library's from_dlpack where it has
    one, else a DLPackResult."""
    name = type(x).__module__.partition(".")[0]
    library = sys.modules.get(name)
    from_dlpack = getattr(library, "from_dlpack", None)
    if name == "torch":
        return from_dlpack(capsule)
    result = DLPackResult(capsule, x.__dlpack_device__())
    return from_dlpack(result) if from_dlpack is not None else result


def dtype_name(x):
    """'float32', 'uint8', ... for numpy arrays, torch tensors and array-API arrays."""
    return str(x.dtype).rpartition(".")[2]


def empty_like(capsule, shape=None, dtype=None):
    """A new packed tensor on capsule's device, as a capsule."""
    return _hetkern.empty(capsule, shape, dtype)
