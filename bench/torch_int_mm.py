"""torch._int_mm (cuBLASLt int8 x int8 -> int32) on the GPU: the peer of hetkern-qmm-offload-bench.

usage: python3 torch_int_mm.py [M N K] ; prints the median time and TOPS of each layout of B.
"""
import sys

import torch


def median_ms(fn, reps=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main():
    m, n, k = (int(v) for v in sys.argv[1:4]) if len(sys.argv) >= 4 else (4096, 4096, 4096)
    a = torch.randint(-128, 128, (m, k), dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 128, (k, n), dtype=torch.int8, device="cuda")
    layouts = {"B row-major": b, "B column-major": b.t().contiguous().t()}
    reference = torch._int_mm(a, b)
    for name, bl in layouts.items():
        assert torch.equal(torch._int_mm(a, bl), reference)
        ms = median_ms(lambda: torch._int_mm(a, bl))
        print(f"torch._int_mm {m}x{n}x{k} {name:15} {ms:8.3f} ms {2 * m * n * k / ms / 1e9:8.1f} TOPS")


if __name__ == "__main__":
    main()
