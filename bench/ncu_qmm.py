#!/usr/bin/env python3
"""Nsight Compute counters of hetkern's GPU matmul kernels on device tensors, a line per kernel.

usage: ncu_qmm.py [--ncu PATH] [--out DIR] [M,N,K[:SCHEDULE] ...]
  default cases: 128,4096,4096 and 4096,4096,4096 with the library's default schedule
  SCHEDULE: a schedule's text, e.g. 128,4096,4096:qmm.offload_mma(tensor_cores=wgmma)
  --out  keeps each case's CSV there (default: a temporary folder)

hetkern.qlinear_matmul on CUDA tensors (uint8 A, int8 B column-major, as torch._int_mm takes it
fastest, uint8 output), the columns of bench/ncu_scans.py: each case in a process of its own under
`ncu --clock-control none --profile-from-start off`, two calls, then one between cudaProfilerStart
and cudaProfilerStop. Fill the GPU kernel cache first (one run of any GPU call). Needs PyTorch with
CUDA and hetkern importable.
"""
import sys

from ncu_scans import parse_arguments, print_table, profile

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
    for _ in range(2):
        hetkern.qlinear_matmul(a, 0.02, 128, b, 0.01, 0, 4.0, 128, out=y, schedule=schedule or None)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    hetkern.qlinear_matmul(a, 0.02, 128, b, 0.01, 0, 4.0, 128, out=y, schedule=schedule or None)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def main(argv):
    if argv[:1] == ["--run-case"]:
        run_case(argv[1])
        return 0
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    parsed = parse_arguments(argv, "ncu_qmm.py", r"\d+,\d+,\d+(:.+)?", "M,N,K[:SCHEDULE], e.g. 128,4096,4096")
    if parsed is None:
        return 2
    ncu, out_dir, cases = parsed
    print_table(profile(ncu, out_dir, cases or CASES, __file__))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
