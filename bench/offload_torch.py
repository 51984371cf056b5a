#!/usr/bin/env python3
"""PyTorch on the GPU for the cases of hetkern-offload-bench, as JSON records (one per line) in the
same form: the peer (role "peer") and the CUDA device-to-device copy (role "cuda copy").

Each group is a function of this file listed in GROUPS; another operator adds its function there
(for example torch._int_mm for quantized matmul) and its own records then join the table.

usage: offload_torch.py [--quick]
"""
import json
import sys

import torch

QUICK = "--quick" in sys.argv[1:]


def median_ms(fn, min_seconds=0.25, min_reps=5):
    fn()
    fn()
    torch.cuda.synchronize()
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    total = 0.0
    while len(times) < min_reps or total < min_seconds * 1e3:
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
        total += times[-1]
        if len(times) >= 200:
            break
    times.sort()
    return times[len(times) // 2]


def emit(group, case, impl, role, ms, rate, unit):
    print(json.dumps({"group": group, "case": case, "impl": impl, "role": role, "ms": ms,
                      "rate": rate, "unit": unit, "check": ""}), flush=True)


def scan_group():
    long_line = 1 << 20 if QUICK else 1 << 28
    side = 1024 if QUICK else 16384
    types = {"float32": torch.float32, "int32": torch.int32, "float16": torch.float16}
    for name, dtype in types.items():
        for shape, axis in (((long_line,), 0), ((8, long_line // 8), 1), ((side, side), 1), ((side, side), 0)):
            case = f"cumsum {name} {{{','.join(map(str, shape))}}} axis {axis}"
            if dtype.is_floating_point:
                x = torch.rand(shape, device="cuda", dtype=dtype)
            else:
                x = torch.randint(-1000, 1000, shape, device="cuda", dtype=dtype)
            gb = 2 * x.numel() * x.element_size() / 1e9
            ms = median_ms(lambda: torch.cumsum(x, axis, dtype=dtype))
            emit("scan", case, "torch.cumsum", "peer", ms, gb / (ms * 1e-3), "GB/s")
            y = torch.empty_like(x)
            ms = median_ms(lambda: y.copy_(x))
            emit("scan", case, "torch copy_ (CUDA)", "cuda copy", ms, gb / (ms * 1e-3), "GB/s")
            del x, y
            torch.cuda.empty_cache()
    x = torch.tensor([[[[2, 1, 3, 5], [3, 8, 7, 3], [9, 6, 2, 4]]]], dtype=torch.float32, device="cuda")
    ms = median_ms(lambda: torch.cumsum(x, 3))
    emit("latency", "cumsum float32 {1,1,3,4} axis 3 (per call)", "torch.cumsum (CUDA)", "peer", ms, 0, "-")


GROUPS = [scan_group]

if __name__ == "__main__":
    if not torch.cuda.is_available():
        sys.exit("offload_torch.py: PyTorch sees no CUDA device")
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}", file=sys.stderr)
    for group in GROUPS:
        group()
