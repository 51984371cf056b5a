#!/usr/bin/env python3
"""hetkern from Python on PyTorch CUDA tensors against PyTorch itself, measured in one run:
hetkern.cumsum against torch.cumsum, and hetkern.qlinear_matmul (int8 x int8 -> uint8, the
requantization fused) against torch._int_mm (cuBLASLt) followed by PyTorch's own requantization:
B row-major and column-major (torch._int_mm's fastest), and B packed once by hetkern.pack_b (the
constant weights' case) with the library's default and each tensor-core kernel, against
torch._int_mm on the column-major B.
Also the first GPU call of this process (the kernel cache decides it, docs/gpu.md). Prints one line
per case: milliseconds per call (median of CUDA-event timings) and the ratio torch / hetkern.

usage: PYTHONPATH=build/release/python python3 bench/python_gpu.py [--reps N]
"""
import argparse
import statistics
import time

import numpy as np
import torch

import hetkern
from peers import requantize  # bench/peers.py, the sweep's PyTorch peer


def median_ms(fn, reps):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def row(name, ours, theirs):
    print(f"{name:44s} hetkern {ours:9.4f} ms  torch {theirs:9.4f} ms  torch/hetkern {theirs / ours:5.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()

    x = torch.ones((3, 4), device="cuda")
    t0 = time.perf_counter()
    hetkern.cumsum(x)
    torch.cuda.synchronize()
    print(f"first GPU call of this process: {1e3 * (time.perf_counter() - t0):.1f} ms")

    for shape, axis, dtype in [((1, 1, 3, 4), -1, torch.float32), ((16384, 16384), -1, torch.float32),
                               ((16384, 16384), 0, torch.float32), ((1 << 28,), 0, torch.float32),
                               ((16384, 16384), -1, torch.float16)]:
        x = torch.randn(shape, device="cuda", dtype=dtype)
        out = torch.empty_like(x)
        ours = median_ms(lambda: hetkern.cumsum(x, axis, out=out), args.reps)
        theirs = median_ms(lambda: torch.cumsum(x, axis, out=out), args.reps)
        row(f"cumsum {list(shape)} axis {axis} {str(dtype)[6:]}", ours, theirs)
        del x, out

    gen = torch.Generator(device="cuda").manual_seed(1)
    for m, n, k in [(4096, 4096, 4096), (8192, 8192, 8192), (128, 4096, 4096), (32, 4096, 4096), (16, 4096, 4096)]:
        a = torch.randint(-128, 128, (m, k), dtype=torch.int8, device="cuda", generator=gen)
        # torch._int_mm takes more than 16 rows only: fewer are timed with 17, a little more work.
        a_torch = a if m > 16 else torch.randint(-128, 128, (17, k), dtype=torch.int8, device="cuda", generator=gen)
        for layout in ("row-major", "column-major"):
            b = torch.randint(-128, 128, (k, n), dtype=torch.int8, device="cuda", generator=gen)
            if layout == "column-major":
                b = b.t().contiguous().t()
            sa, sb, sy, zy = 0.02, 0.01, 4.0, 128
            y = torch.empty((m, n), dtype=torch.uint8, device="cuda")
            zero_y = np.array(zy, np.uint8)
            ours = median_ms(lambda: hetkern.qlinear_matmul(a, sa, 0, b, sb, 0, sy, zero_y, out=y), args.reps)
            multiplier = sa * sb / sy

            def torch_qmm():
                return requantize(torch, torch._int_mm(a_torch, b), multiplier, zy, torch.uint8)

            theirs = median_ms(torch_qmm, args.reps)
            row(f"qlinear_matmul {m}x{n}x{k} B {layout}", ours, theirs)
        packed = hetkern.pack_b(b)
        for kernel, schedule in (("default", None), ("mma", "qmm.offload_mma(tensor_cores=mma)"),
                                 ("wgmma", "qmm.offload_mma(tensor_cores=wgmma)")):
            ours = median_ms(lambda: hetkern.qlinear_matmul(a, sa, 0, packed, sb, 0, sy, zero_y, out=y,
                                                            schedule=schedule), args.reps)
            row(f"qlinear_matmul {m}x{n}x{k} B packed, {kernel}", ours, theirs)


if __name__ == "__main__":
    main()
