#!/usr/bin/python3
"""Peers of a hetkern benchmark sweep: numpy's cumsum/cumprod on the CPU, and PyTorch where it is
importable (torch.cumsum on the CPU and on CUDA; torch._int_mm on the CPU and on CUDA followed by
hetkern's requantization), timed like hetkern: a warm-up, then repetitions until at least
min_seconds passed and min_repetitions ran; the median and spread of the calls.

Reads the sweep's cases as JSON on stdin ({"min_seconds", "min_repetitions", "cases": [...]}) and
writes one line per result, a word and a JSON object: "peer {...}" for each library (available or
why not), "record {...}" per measurement, "skip {...}" for a case a peer cannot run. A missing library
is reported, not an error. A qlinear-matmul case carries the quantization of hetkern's record of it
(b_range, b_layout, a_scale, a_zero_point, b_scale, out_scale, out_zero_point) and optionally
"threads", the CPU thread counts to run torch._int_mm at (default: PyTorch's own). `hetkern bench
--sweep` and tools/cpu-report.sh run it; it is not meant to be run by hand.
"""
import json
import os
import sys
import time

NUMPY_TYPES = {"float16", "float32", "float64", "int32", "uint32", "int64", "uint64"}


def emit(kind, value):
    sys.stdout.write(kind + " " + json.dumps(value) + "\n")
    sys.stdout.flush()


def stats(samples):
    s = sorted(samples)

    def quantile(q):
        pos = q * (len(s) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (pos - lo) * (s[hi] - s[lo])

    return {"median_ns": quantile(0.5), "min_ns": s[0], "q1_ns": quantile(0.25), "q3_ns": quantile(0.75),
            "max_ns": s[-1], "repetitions": len(s)}


def time_calls(call, timing, synchronize=None):
    call()
    if synchronize:
        synchronize()
    samples = []
    start = time.perf_counter()
    while len(samples) < timing["min_repetitions"] or time.perf_counter() - start < timing["min_seconds"]:
        t0 = time.perf_counter_ns()
        call()
        if synchronize:
            synchronize()
        samples.append(float(time.perf_counter_ns() - t0))
    return stats(samples)


def scan_record(case, peer, schedule, device, threads, timing_stats, nbytes):
    r = {"case": case["case"], "case_line": case["case_line"], "kind": "peer", "peer": peer,
         "strategy": peer, "device": device, "pin": None}
    for key in ("op", "shape", "dtype", "axis", "direction", "exclusive"):
        r[key] = case[key]
    r.update({"schedule": schedule, "threads": threads, "isa": None})
    r.update(timing_stats)
    r["bytes"] = nbytes
    r["gbps"] = nbytes / timing_stats["median_ns"]
    base = next((b for b in case["baselines"] if b["threads"] == threads), None)
    for key in ("copy_method", "copy_median_ns", "copy_min_ns", "copy_max_ns", "copy_gbps"):
        r[key] = base[key] if base else None
    r["time_vs_baseline"] = timing_stats["median_ns"] / base["copy_median_ns"] if base else None
    r["median_with_transfers_ns"] = None
    r["median_without_transfers_ns"] = None
    return r


def scan_input(np, case):
    rng = np.random.default_rng(20260301)
    shape = tuple(case["shape"])
    if case["dtype"].startswith("float"):
        u = rng.uniform(-1, 1, size=shape)
        x = 1 + u * 2.0 ** -10 if case["op"] == "cumprod" else u
    else:
        x = rng.integers(0, 2 ** 31, size=shape)
    return x.astype(case["dtype"])


def guarded(case, schedule, measure):
    """Runs one peer measurement; a case the library refuses (a dtype it lacks, a shape its kernel
    does not take, memory) is reported as skipped, so that the other measurements still count."""
    try:
        measure()
    except Exception as e:  # the peer's own error, whatever its type, is the reason
        emit("skip", {"case": case["case"], "schedule": schedule, "reason": f"{type(e).__name__}: {e}"})


def numpy_peer(cases, timing):
    try:
        import numpy as np
    except Exception as e:  # missing (ImportError) or broken: reported, the sweep goes on
        emit("peer", {"name": "numpy", "available": False, "version": None, "reason": f"{type(e).__name__}: {e}"})
        return
    emit("peer", {"name": "numpy", "available": True, "version": np.__version__, "reason": None})
    for case in cases:
        if case["op"] == "qlinear-matmul":
            continue
        if case["exclusive"]:
            emit("skip", {"case": case["case"], "schedule": "numpy", "reason": "numpy has no exclusive scan"})
            continue
        guarded(case, "numpy", lambda: numpy_scan(np, case, timing))


def numpy_scan(np, case, timing):
    x = scan_input(np, case)
    y = np.empty_like(x)
    fn = np.cumprod if case["op"] == "cumprod" else np.cumsum
    axis = case["axis"]
    if case["direction"] == "decreasing":
        xs, ys = np.flip(x, axis), np.flip(y, axis)
    else:
        xs, ys = x, y
    s = time_calls(lambda: fn(xs, axis=axis, out=ys), timing)
    emit("record", scan_record(case, "numpy", f"numpy.{fn.__name__}", "host", 1, s, 2 * x.nbytes))


def torch_peer(cases, timing):
    try:
        import numpy as np
        import torch
        cuda = torch.cuda.is_available()
    except Exception as e:  # missing (ImportError) or broken (a CUDA library, an ABI): reported
        emit("peer", {"name": "torch", "available": False, "version": None, "reason": f"{type(e).__name__}: {e}"})
        return
    emit("peer", {"name": "torch", "available": True, "version": torch.__version__,
                  "reason": None if cuda else "no CUDA device: CPU only"})
    sync = torch.cuda.synchronize if cuda else None
    for case in cases:
        if case["op"] == "qlinear-matmul":
            guarded(case, "torch._int_mm", lambda: torch_int_mm_cpu(torch, case, timing))
            if cuda:
                guarded(case, "torch._int_mm(cuda)", lambda: torch_int_mm_cuda(torch, case, timing, sync))
            continue
        if case["exclusive"] or case["direction"] == "decreasing":
            emit("skip", {"case": case["case"], "schedule": "torch.cumsum",
                          "reason": "torch has no exclusive or decreasing scan without extra copies"})
            continue
        guarded(case, "torch", lambda: torch_scan(np, torch, case, timing, cuda, sync))


def torch_scan(np, torch, case, timing, cuda, sync):
    x = torch.from_numpy(scan_input(np, case))
    fn = torch.cumprod if case["op"] == "cumprod" else torch.cumsum
    axis = case["axis"]
    y = torch.empty_like(x)
    s = time_calls(lambda: fn(x, axis, out=y), timing)
    threads = torch.get_num_threads()
    emit("record", scan_record(case, "torch", f"torch.{fn.__name__}", "host", threads, s,
                               2 * x.numel() * x.element_size()))
    if not cuda:
        return
    xd, yd = x.cuda(), torch.empty_like(x, device="cuda")
    kernel = time_calls(lambda: fn(xd, axis, out=yd), timing, sync)
    # With transfers: the input to the device, the scan, the output back to pinned host memory.
    xh, yh = x.pin_memory(), torch.empty_like(x).pin_memory()

    def round_trip():
        xd.copy_(xh, non_blocking=True)
        fn(xd, axis, out=yd)
        yh.copy_(yd, non_blocking=True)

    moved = time_calls(round_trip, timing, sync)
    r = scan_record(case, "torch", f"torch.{fn.__name__}(cuda)", "gpu", threads, kernel,
                    2 * x.numel() * x.element_size())
    r["median_without_transfers_ns"] = kernel["median_ns"]
    r["median_with_transfers_ns"] = moved["median_ns"]
    emit("record", r)


def requantize(torch, acc, multiplier, zero_point, dtype):
    """hetkern's requantization written in PyTorch: the int32 accumulators scaled in float32, rounded
    half to even, moved by the output's zero point and clamped to its type."""
    info = torch.iinfo(dtype)
    return (torch.round(acc.float() * multiplier) + zero_point).clamp_(info.min, info.max).to(dtype)


def int_mm_problem(torch, case, device):
    """The operands of a qlinear-matmul case as torch._int_mm takes them (int8 x int8 -> int32) and
    the requantization of hetkern's record: B over the case's b_range, laid out as its b_layout; A
    drawn over its own type already shifted by its zero point (a uint8 A with zero point 128 is int8
    A - 128 exactly, so the products are hetkern's). Returns (A, B, the matmul's function with
    requantization)."""
    m, n, k = case["shape"]
    a_type, _, out_type = case["dtype"].split(",")
    if "a_scale" not in case:
        raise ValueError("no hetkern measurement of this case to take the quantization from")
    zero = case["a_zero_point"]
    a_lo, a_hi = (0, 255) if a_type == "uint8" else (-128, 127)
    if a_lo - zero < -128 or a_hi - zero > 127:
        raise ValueError(f"torch._int_mm takes int8 A: {a_type} A minus its zero point {zero} does not fit int8")
    gen = torch.Generator(device=device).manual_seed(20260302)
    a = torch.randint(a_lo - zero, a_hi - zero + 1, (m, k), dtype=torch.int8, device=device, generator=gen)
    b_lo, b_hi = case["b_range"]
    if b_lo < -128 or b_hi > 127:
        raise ValueError(f"torch._int_mm takes int8 B: B's range [{b_lo}, {b_hi}] does not fit int8")
    if case.get("b_layout") == "columns":  # each column of B contiguous, as hetkern read it
        b = torch.randint(b_lo, b_hi + 1, (n, k), dtype=torch.int8, device=device, generator=gen).t()
    else:
        b = torch.randint(b_lo, b_hi + 1, (k, n), dtype=torch.int8, device=device, generator=gen)
    multiplier = case["a_scale"] * case["b_scale"] / case["out_scale"]
    out_dtype = getattr(torch, out_type)  # uint8 or int8, named alike in both

    def matmul(a, b):
        return requantize(torch, torch._int_mm(a, b), multiplier, case["out_zero_point"], out_dtype)

    return a, b, matmul


def int_mm_record(case, device, schedule, threads, timing_stats):
    m, n, k = case["shape"]
    ops = 2 * m * n * k
    r = {"case": case["case"], "case_line": case["case_line"], "kind": "peer", "peer": "torch",
         "strategy": "torch", "device": device, "pin": None, "op": case["op"], "shape": case["shape"],
         "dtype": case["dtype"], "schedule": schedule, "threads": threads,
         # PyTorch's oneDNN reads its instruction-set cap from the environment (tools/cpu-report.sh).
         "isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "").lower() or None}
    r.update(timing_stats)
    r.update({"ops": ops, "gops": ops / timing_stats["median_ns"], "time_vs_baseline": None,
              "median_without_transfers_ns": None, "median_with_transfers_ns": None})
    return r


def torch_int_mm_cpu(torch, case, timing):
    """torch._int_mm on the CPU (oneDNN inside PyTorch) with the requantization, at each of the
    case's thread counts; B has no packed form here, so a --packed-b case is compared as it is."""
    a, b, matmul = int_mm_problem(torch, case, "cpu")
    default_threads = torch.get_num_threads()
    schedule = f"torch._int_mm + requantization (cpu, s8 x s8 -> s32 -> {case['dtype'].split(',')[2]})"
    try:
        for threads in case.get("threads") or [default_threads]:
            torch.set_num_threads(threads)
            s = time_calls(lambda: matmul(a, b), timing)
            emit("record", int_mm_record(case, "host", schedule, threads, s))
    finally:
        torch.set_num_threads(default_threads)


def torch_int_mm_cuda(torch, case, timing, sync):
    m, n, k = case["shape"]
    if m <= 16 or n % 8 or k % 8:
        emit("skip", {"case": case["case"], "schedule": "torch._int_mm(cuda)",
                      "reason": "torch._int_mm on CUDA needs M > 16 and N, K multiples of 8"})
        return
    a, b, matmul = int_mm_problem(torch, case, "cuda")
    kernel = time_calls(lambda: matmul(a, b), timing, sync)
    ah, bh = a.cpu().pin_memory(), b.cpu().pin_memory()
    ch = matmul(a, b).cpu().pin_memory()

    def round_trip():
        a.copy_(ah, non_blocking=True)
        b.copy_(bh, non_blocking=True)
        ch.copy_(matmul(a, b), non_blocking=True)

    moved = time_calls(round_trip, timing, sync)
    schedule = f"torch._int_mm + requantization (cuda, s8 x s8 -> s32 -> {case['dtype'].split(',')[2]})"
    r = int_mm_record(case, "gpu", schedule, None, kernel)
    r.update({"isa": None, "median_without_transfers_ns": kernel["median_ns"],
              "median_with_transfers_ns": moved["median_ns"]})
    emit("record", r)


def main():
    request = json.load(sys.stdin)
    timing = {"min_seconds": request["min_seconds"], "min_repetitions": request["min_repetitions"]}
    cases = [c for c in request["cases"] if c["op"] == "qlinear-matmul" or c["dtype"] in NUMPY_TYPES]
    numpy_peer(cases, timing)
    torch_peer(cases, timing)


if __name__ == "__main__":
    main()
