#!/usr/bin/env python3
"""Nsight Compute counters of hetkern's GPU matmul kernels on device tensors, a line per kernel.

usage: ncu_qmm.py [--ncu PATH] [--out DIR] [M,N,K[:SCHEDULE] ...]
  default cases: 128,4096,4096 and 4096,4096,4096 with the library's default schedule
  SCHEDULE: a schedule's text, e.g. 128,4096,4096:qmm.offload_mma(tensor_cores=wgmma)
  --out  keeps each case's CSV there (default: a temporary folder)

hetkern.qlinear_matmul on CUDA tensors (uint8 A, int8 B column-major, as torch._int_mm takes it
fastest, uint8 output), the columns of bench/ncu_scans.py: each case in a process of its own under
`ncu --clock-control none --profile-from-start off`, two calls, then one between cudaProfilerStart
and cudaProfilerStop. The first case runs once without ncu before, which fills the GPU kernel cache
(bench/ncu_scans.py). Needs PyTorch with CUDA and hetkern importable.
"""
import sys

from ncu_scans import command

CASES = ["128,4096,4096", "4096,4096,4096"]


def run_case(case):
    """The profiled process: one case's calls."""
    import torch
    import hetkern
    sizes, _, schedule = case.partition(":")
    m, n, k = (int(v) for v in sizes.split(","))
    a = torch.randint(0, 256, (m, k), dtype=torch.uint8, device="cuda")
    b = torch.randint(-128, 128, (n, k), dtype=torch.int8, device="cuda").t()
    y = torch.empty((m, n), dtype=torch.uint8, device="cuda")

    def call():
        hetkern.qlinear_matmul(a, 0.02, 128, b, 0.01, 0, 4.0, 128, out=y, schedule=schedule or None)

    for _ in range(2):
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    sys.exit(command(sys.argv[1:], __file__, __doc__, run_case, CASES, r"\d+,\d+,\d+(:.+)?",
                     "M,N,K[:SCHEDULE], e.g. 128,4096,4096"))
