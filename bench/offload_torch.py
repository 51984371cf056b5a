#!/usr/bin/env python3
"""PyTorch on the GPU for the cases of hetkern-offload-bench, as JSON records (one per line) in the
same form: the peer (role "peer") and the CUDA device-to-device copy (role "cuda copy").

Each group is a function of this file listed in GROUPS; another operator adds its function there
and its own records then join the table. Groups: scans (torch.cumsum) and qmm (torch._int_mm,
cuBLASLt int8 x int8 -> int32, with B row-major and column-major: its fastest layout is the peer
of hetkern-qmm-offload-bench --jsonl).

usage: offload_torch.py [--quick] [--group scan|qmm]...   (no --group: every group)
       QMM_SHAPES="M N K ..." sets the matmuls of the qmm group
"""
import json
import os
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


def qmm_shapes():
    """M N K triples from the environment's QMM_SHAPES (as tools/offload-gpu-report.sh sets it), else
    1024^3 with --quick, else 4096^3, 8192^3 and 128 x 4096 x 4096."""
    dims = [int(v) for v in os.environ.get("QMM_SHAPES", "").split()]
    if dims and len(dims) % 3 == 0:
        return [tuple(dims[i:i + 3]) for i in range(0, len(dims), 3)]
    if dims:
        sys.exit("offload_torch.py: QMM_SHAPES must hold M N K triples")
    return [(1024, 1024, 1024)] if QUICK else [(4096, 4096, 4096), (8192, 8192, 8192), (128, 4096, 4096)]


def qmm_group():
    for m, n, k in qmm_shapes():
        # torch._int_mm takes more than 16 rows only: fewer are timed with 17, a little more work.
        rows = max(m, 17)
        a = torch.randint(-128, 128, (rows, k), dtype=torch.int8, device="cuda")
        b = torch.randint(-128, 128, (k, n), dtype=torch.int8, device="cuda")
        reference = torch._int_mm(a, b)
        for layout, bl in (("B row-major", b), ("B column-major", b.t().contiguous().t())):
            exact = torch.equal(torch._int_mm(a, bl), reference)
            ms = median_ms(lambda: torch._int_mm(a, bl))
            print(json.dumps({"group": "qmm", "case": f"qlinear-matmul {m}x{n}x{k}",
                              "impl": f"torch._int_mm (cuBLASLt, int32 out), {layout}"
                                      + (f", {rows} rows" if rows != m else ""), "role": "peer",
                              "ms": ms, "rate": 2 * m * n * k / (ms * 1e-3) / 1e12, "unit": "TOPS",
                              "check": "same as row-major" if exact else "DIFFERS from row-major"}), flush=True)
        del a, b, reference
        torch.cuda.empty_cache()


GROUPS = {"scan": scan_group, "qmm": qmm_group}

if __name__ == "__main__":
    if not torch.cuda.is_available():
        sys.exit("offload_torch.py: PyTorch sees no CUDA device")
    print(f"# torch {torch.__version__} on {torch.cuda.get_device_name()}", file=sys.stderr)
    chosen = [sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--group"] or list(GROUPS)
    unknown = [g for g in chosen if g not in GROUPS]
    if unknown:
        sys.exit(f"offload_torch.py: unknown group {unknown[0]} (groups: {', '.join(GROUPS)})")
    for name in chosen:
        GROUPS[name]()
