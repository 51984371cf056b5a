"""PyTorch tensors through DLPack, on the CPU and on CUDA (run on a machine with torch; the CUDA
tests need an offload build of hetkern and a GPU)."""
import numpy as np
import pytest

import hetkern

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

cuda = pytest.mark.skipif(not (torch.cuda.is_available() and hetkern.info()["offload"] and
                               any(d["kind"] == "cuda" for d in hetkern.devices())),
                          reason="needs torch with CUDA and hetkern built with offload on a GPU")


def torch_scan_oracle(x, axis, reverse, exclusive):
    y = x.double().flip(axis) if reverse else x.double()
    r = torch.cumsum(y, axis)
    if exclusive:
        r = r - y
    return (r.flip(axis) if reverse else r).to(x.dtype)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
@pytest.mark.parametrize("shape,axis", [((1000,), 0), ((37, 513), 0), ((37, 513), -1), ((3, 5, 700), 1)])
@pytest.mark.parametrize("reverse,exclusive", [(False, False), (True, True)])
def test_cumsum_tensors(device, shape, axis, reverse, exclusive):
    x = torch.randn(shape, device=device)
    hetkern.transfer_counters(reset=True)
    y = hetkern.cumsum(x, axis, reverse=reverse, exclusive=exclusive)
    assert isinstance(y, torch.Tensor) and y.device == x.device and y.shape == x.shape
    torch.testing.assert_close(y, torch_scan_oracle(x, axis, reverse, exclusive), rtol=2e-6, atol=1e-4)
    if device == "cuda":
        assert hetkern.transfer_counters()["to_host_bytes"] == 0
        assert hetkern.transfer_counters()["to_device_bytes"] == 0


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_out_in_place_and_views(device):
    x = torch.randn(64, 96, device=device)
    want = torch_scan_oracle(x, 0, False, False)
    y = x.clone()
    assert hetkern.cumsum(y, 0, out=y) is y
    torch.testing.assert_close(y, want, rtol=2e-6, atol=1e-4)
    t = x.t()  # a transposed view: strides, no copy
    torch.testing.assert_close(hetkern.cumsum(t, 1), want.t(), rtol=2e-6, atol=1e-4)
    e = x[:1].expand(5, 96)  # a stride of 0
    torch.testing.assert_close(hetkern.cumprod(e.abs() + 0.5, 0), torch.cumprod((e.abs() + 0.5).double(), 0).float())


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
@pytest.mark.parametrize("ta,tb,ty", [(torch.uint8, torch.int8, np.uint8), (torch.int8, torch.int8, np.int8),
                                      (torch.uint8, torch.uint8, np.int8), (torch.int8, torch.uint8, np.uint8)])
def test_qlinear_matmul_tensors(device, ta, tb, ty):
    from conftest import requantize_reference
    gen = torch.Generator().manual_seed(5)
    a = torch.randint(0, 127, (96, 160), dtype=ta, generator=gen)
    b = torch.randint(0, 127, (160, 80), dtype=tb, generator=gen)
    want = requantize_reference(a.numpy(), 0.25, 3, b.numpy(), 0.5, 1, 64.0, 7, ty)
    hetkern.transfer_counters(reset=True)
    y = hetkern.qlinear_matmul(a.to(device), 0.25, 3, b.to(device), 0.5, 1, 64.0, 7, out_dtype=ty)
    assert isinstance(y, torch.Tensor) and y.device.type == device
    np.testing.assert_array_equal(y.cpu().numpy(), want)
    if device == "cuda":  # only the quantization parameters travel
        assert hetkern.transfer_counters()["to_host_bytes"] == 0


@cuda
def test_producer_stream_is_respected():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.ones(1 << 22, device="cuda")
        x.mul_(2)  # queued on s, maybe unfinished when hetkern starts
        y = hetkern.cumsum(x)
    assert y[-1].item() == 2 * (1 << 22)


@cuda
def test_output_is_not_written_before_the_producer_read_it():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.ones(1 << 22, device="cuda")
        out = torch.zeros(1 << 22, device="cuda")
        seen = out.add(1)  # reads out on s, maybe unfinished when hetkern writes it
        hetkern.cumsum(x, out=out)
    assert torch.equal(seen, torch.ones_like(seen)) and out[-1].item() == 1 << 22


@cuda
def test_new_results_come_from_torchs_allocator():
    x = torch.ones(1 << 20, device="cuda")
    a = torch.ones(64, 96, dtype=torch.uint8, device="cuda")
    b = torch.ones(96, 32, dtype=torch.int8, device="cuda")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    y = hetkern.cumsum(x)
    z = hetkern.qlinear_matmul(a, 0.25, 3, b, 0.5, 1, 64.0, 7)
    assert torch.cuda.memory_allocated() - before >= y.numel() * 4 + z.numel()
    assert y.is_contiguous() and z.shape == (64, 32) and z.dtype == torch.uint8
    assert y[-1].item() == 1 << 20


@cuda
def test_pinned_cpu_tensors_go_to_the_gpu_directly():
    # Page-locked CPU tensors (pin_memory()) are host tensors whose memory the GPU reads and writes
    # itself: the offload schedules copy them without staging, and give the same results.
    x = torch.randn(37, 100003).pin_memory()
    want = torch_scan_oracle(x, 1, False, False)
    out = torch.empty_like(x).pin_memory()
    for schedule in ("scan.offload_rows", "scan.offload_warp_rows", "scan.split(gpu_share=1000)"):
        hetkern.transfer_counters(reset=True)
        assert hetkern.cumsum(x, 1, out=out, schedule=schedule) is out
        torch.testing.assert_close(out, want, rtol=2e-6, atol=1e-4)
        counters = hetkern.transfer_counters()
        assert counters["to_device_bytes"] >= x.numel() * 4 and counters["to_host_bytes"] >= x.numel() * 4


@cuda
@pytest.mark.parametrize("k", [256, 200])  # the GPU kernels' int8 columns, and B's own bytes
def test_cuda_weights_packed_once(k):
    gen = torch.Generator().manual_seed(11)
    a = torch.randint(0, 256, (2, 96, k), dtype=torch.uint8, generator=gen).cuda()
    b = torch.randint(0, 256, (k, 80), dtype=torch.uint8, generator=gen).cuda()
    w = hetkern.pack_b(b)
    assert w.on_device and w.shape == (k, 80) and w.dtype == "uint8" and w.nbytes >= k * 80
    want = hetkern.qlinear_matmul(a, 0.25, 3, b, 0.5, 130, 64.0, 7)
    b.zero_()  # the packed copy does not follow B's memory
    for schedule in (None, "qmm.offload_mma", "qmm.devices"):
        got = hetkern.qlinear_matmul(a, 0.25, 3, w, 0.5, 130, 64.0, 7, schedule=schedule)
        assert got.device == a.device and torch.equal(got, want)
    with pytest.raises(hetkern.Error, match="CUDA tensors"):
        hetkern.qlinear_matmul(a.cpu(), 0.25, 3, w, 0.5, 130, 64.0, 7)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_tensors_that_require_gradients_are_refused_and_out_is_untouched(device):
    x = torch.ones(64, device=device, requires_grad=True)
    out = torch.full((64,), 5.0, device=device)
    with pytest.raises((RuntimeError, BufferError), match="gradient"):  # BufferError from PyTorch 2.5
        hetkern.cumsum(x, out=out)
    assert torch.equal(out, torch.full_like(out, 5.0))
    np.testing.assert_array_equal(hetkern.cumsum(x.detach(), out=out).cpu().numpy(), np.arange(1, 65))


@cuda
def test_the_launch_shim_is_the_offload_runtimes_driver_from_python():
    # Without it, kernels keep within 48 KB of team memory (fewer pipeline stages): the same
    # results, slower. Python holds no global C++ runtime, which the shim once needed.
    import ctypes
    import os
    a = torch.ones(16, 64, dtype=torch.uint8, device="cuda")
    b = torch.ones(64, 8, dtype=torch.int8, device="cuda")
    assert hetkern.qlinear_matmul(a, 1.0, 0, b, 1.0, 0, 1.0, 0)[0, 0].item() == 64
    driver = ctypes.CDLL("libcuda.so", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    assert ctypes.c_int.in_dll(driver, "hetkern_cuda_launch_shim").value == 1
    gpu = next(d for d in hetkern.devices() if d["kind"] == "cuda")
    assert gpu["team_memory_bytes"] > 48 * 1024
