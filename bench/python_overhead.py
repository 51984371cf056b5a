#!/usr/bin/env python3
"""The Python binding's cost: per-call overhead over the C++ call for a {1,1,3,4} float32 cumsum
and a 16 x 16 x 64 qlinear_matmul, and hetkern.cumsum against numpy.cumsum on 2^24 float32 and on
{4096,4096} along each axis, as ratios measured in one run. Prints one line per measurement.

usage: PYTHONPATH=build/release/python python3 bench/python_overhead.py [--bench build/release/bin/hetkern-bench]
       [--cli build/release/bin/hetkern]
"""
import argparse
import json
import subprocess
import time

import numpy as np

import hetkern


def best_per_call(fn, min_seconds=0.5, repeats=7):
    """The fastest of `repeats` timings, each of enough calls to last min_seconds / repeats."""
    n, start = 1, time.perf_counter()
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed > min_seconds / repeats or time.perf_counter() - start > min_seconds:
            break
        n *= 4
    best = elapsed / n
    for _ in range(repeats - 1):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def cpp_tiny_call(bench):
    out = subprocess.run([bench, "--benchmark_filter=^call/cumsum/float32/1,1,3,4$", "--benchmark_format=json",
                          "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true"],
                         capture_output=True, text=True, check=True).stdout
    rows = json.loads(out)["benchmarks"]
    return next(r["real_time"] for r in rows if r.get("aggregate_name") == "median") * 1e-9


def cpp_small_matmul(cli, threads):
    """hetkern's own time for the 16 x 16 x 64 u8 x s8 matmul of the library's choice (`hetkern bench`)."""
    out = subprocess.run([cli, "bench", "qlinear-matmul", "--shape", "16,16,64", "--threads", str(threads),
                          "--min-time", "0.5", "--json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ns"] * 1e-9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/release/bin/hetkern-bench")
    parser.add_argument("--cli", default="build/release/bin/hetkern")
    args = parser.parse_args()
    print(f"hetkern {hetkern.info()['version']}, {hetkern.info()['default_threads']} threads, "
          f"isa {hetkern.info()['isa']}")

    x = np.ones((1, 1, 3, 4), np.float32)
    out = np.empty_like(x)
    cpp = cpp_tiny_call(args.bench)
    py_out = best_per_call(lambda: hetkern.cumsum(x, 3, out=out))
    py_new = best_per_call(lambda: hetkern.cumsum(x, 3))
    print(f"{{1,1,3,4}} cumsum: C++ call {cpp * 1e6:.2f} us; hetkern.cumsum(out=) {py_out * 1e6:.2f} us "
          f"(overhead {(py_out - cpp) * 1e6:.2f} us); hetkern.cumsum() {py_new * 1e6:.2f} us "
          f"(overhead {(py_new - cpp) * 1e6:.2f} us); numpy.cumsum {best_per_call(lambda: np.cumsum(x, 3)) * 1e6:.2f} us")

    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (16, 64), dtype=np.uint8)
    b = rng.integers(-64, 64, (64, 16), dtype=np.int8)
    y = np.empty((16, 16), np.uint8)
    cpp = cpp_small_matmul(args.cli, hetkern.info()["default_threads"])
    numbers = best_per_call(lambda: hetkern.qlinear_matmul(a, 0.01, 128, b, 0.02, 0, 0.5, 100, out=y))
    za, zb, zy = np.uint8(128), np.int8(0), np.uint8(100)
    typed = best_per_call(lambda: hetkern.qlinear_matmul(a, np.float32(0.01), za, b, np.float32(0.02), zb,
                                                         np.float32(0.5), zy, out=y))
    print(f"16 x 16 x 64 qlinear_matmul: C++ call {cpp * 1e6:.2f} us; Python numbers {numbers * 1e6:.2f} us "
          f"(overhead {(numbers - cpp) * 1e6:.2f} us); numpy scalars {typed * 1e6:.2f} us "
          f"(overhead {(typed - cpp) * 1e6:.2f} us)")

    cases = [("2^24 float32", rng.standard_normal(1 << 24).astype(np.float32), 0)]
    square = rng.standard_normal((4096, 4096)).astype(np.float32)
    cases += [("{4096,4096} axis 0", square, 0), ("{4096,4096} axis 1", square, 1)]
    for name, data, axis in cases:
        out = np.empty_like(data)
        hk = best_per_call(lambda: hetkern.cumsum(data, axis, out=out), min_seconds=2.0, repeats=5)
        ref = best_per_call(lambda: np.cumsum(data, axis, out=out), min_seconds=2.0, repeats=5)
        print(f"{name}: hetkern.cumsum {hk * 1e3:.2f} ms, numpy.cumsum {ref * 1e3:.2f} ms, "
              f"numpy/hetkern {ref / hk:.2f}x")


if __name__ == "__main__":
    main()
