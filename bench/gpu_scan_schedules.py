#!/usr/bin/env python3
"""hetkern.cumsum on CUDA tensors, the library's default schedule and any others given, against
PyTorch's copy of the same tensor, in one process: for each shape and type, every schedule's
output is checked against torch.cumsum in float64 (int32: exactly), then each round times the copy
and each schedule in turn (CUDA events, the median of --reps calls, `out` given). Prints a Markdown
table last: the copy's time over each schedule's, the median of the rounds and every round.

usage: PYTHONPATH=build/release/python python3 bench/gpu_scan_schedules.py
           [--shape 65536,1024 ...] [--dtype float32,int32,float16] [--axis 0]
           [--schedule "scan.offload_columns(threads=64, stages=4)" ...] [--rounds 2] [--reps 30]
"""
import argparse
import statistics

import torch

import hetkern
from python_gpu import median_ms  # bench/python_gpu.py: CUDA events, the median of reps calls

TYPES = {"float32": torch.float32, "int32": torch.int32, "float16": torch.float16}
# Beyond the spec's bounds, room for float64's own rounding in the reference (float32) and for
# float32 accumulation over long lines (float16).
TOLERANCE = {torch.float32: (2.0**-23, 2.0**-32), torch.float16: (2.0**-10, 2.0**-16)}


def random_tensor(shape, dtype):
    if dtype == torch.int32:
        return torch.randint(-100, 100, shape, device="cuda", dtype=dtype)
    return torch.randn(shape, device="cuda", dtype=dtype)


def wrong_outputs(x, y, axis):
    """How many outputs miss the reference: exact for int32, within the tolerance for floats."""
    if x.dtype == torch.int32:
        return int((y != torch.cumsum(x, dim=axis, dtype=torch.int32)).sum())
    wide = x.double()
    exact, magnitude = torch.cumsum(wide, dim=axis), torch.cumsum(wide.abs(), dim=axis)
    relative, absolute = TOLERANCE[x.dtype]
    return int(((y.double() - exact).abs() > relative * exact.abs() + absolute * magnitude).sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", help="comma-separated sizes (repeatable)")
    parser.add_argument("--dtype", default="float32,int32,float16", help="comma-separated: " + ", ".join(TYPES))
    parser.add_argument("--axis", type=int, default=0)
    parser.add_argument("--schedule", action="append", default=[], help="a schedule besides the default (repeatable)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split(",")) for s in (args.shape or ["65536,1024", "1048576,16"])]
    dtypes = [TYPES[name] for name in args.dtype.split(",")]
    schedules = [None] + args.schedule
    rows = []
    for shape in shapes:
        for dtype in dtypes:
            x = random_tensor(shape, dtype)
            y, copy = torch.empty_like(x), torch.empty_like(x)
            ratios = {s: [] for s in schedules}
            wrong = {}
            for s in schedules:
                hetkern.cumsum(x, axis=args.axis, out=y, schedule=s)
                torch.cuda.synchronize()
                wrong[s] = wrong_outputs(x, y, args.axis)
            for _ in range(args.rounds):
                for s in schedules:
                    copy_ms = median_ms(lambda: copy.copy_(x), args.reps)
                    scan_ms = median_ms(lambda: hetkern.cumsum(x, axis=args.axis, out=y, schedule=s), args.reps)
                    ratios[s].append(copy_ms / scan_ms)
            for s in schedules:
                rounds = " ".join(f"{r:.3f}" for r in ratios[s])
                rows.append(f"| `{','.join(map(str, shape))}` | {str(dtype).removeprefix('torch.')} | "
                            f"{s or 'default'} | {statistics.median(ratios[s]):.3f} ({rounds}) | {wrong[s]} |")
            del x, y, copy
    print(f"\naxis {args.axis}, {args.rounds} rounds of {args.reps} calls, {torch.cuda.get_device_name()}\n")
    print("| shape | type | schedule | CUDA copy / hetkern (rounds) | wrong outputs |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
