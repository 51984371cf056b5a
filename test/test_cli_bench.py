#!/usr/bin/python3
"""`hetkern bench`: the JSON records are complete and sane, the baselines are measured, the reported
schedule is one hetkern accepts, oneDNN agrees with hetkern where B cannot saturate, and bad input
exits with status 2 and one line on stderr. Small cases and few repetitions keep it fast.
usage: test_cli_bench.py PATH/TO/hetkern
"""
import json
import os
import re
import subprocess
import sys
import unittest

HETKERN = None
QUICK = ["--min-time", "0", "--min-reps", "3"]
SCHEDULE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\(([a-z_][a-z0-9_]*=[a-z0-9_]+(, )?)*\))?$")
COMMON_FIELDS = ["op", "shape", "dtype", "schedule", "threads", "isa", "median_ns", "min_ns", "q1_ns",
                 "q3_ns", "max_ns", "repetitions", "time_vs_baseline"]
SCAN_FIELDS = COMMON_FIELDS + ["axis", "direction", "exclusive", "bytes", "gbps", "copy_method",
                               "copy_median_ns", "copy_min_ns", "copy_max_ns", "copy_gbps"]
QMM_FIELDS = COMMON_FIELDS + ["b_range", "b_layout", "packed_b", "a_scale", "a_zero_point", "b_scale", "b_zero_point", "out_scale",
                              "out_zero_point", "ops", "gops", "onednn_median_ns", "onednn_min_ns",
                              "onednn_max_ns", "onednn_gops", "onednn_mismatches", "onednn_reason",
                              "onednn_isa", "onednn_impl", "onednn_version"]
# Records of the host kernels (qmm.tiled, qmm.parallel) also carry the measured roof.
PEAK_FIELDS = ["peak_gops", "peak_method"]
SIZES = {"float16": 2, "float32": 4, "float64": 8, "bfloat16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8}


def run(*args):
    return subprocess.run([HETKERN, "bench", *map(str, args)], capture_output=True, text=True, timeout=60)


class Bench(unittest.TestCase):
    def record(self, *args):
        result = run(*args, *QUICK, "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 1, result.stdout)
        return json.loads(lines[0])

    def assert_timing(self, r, prefix=""):
        lo, median, hi = r[prefix + "min_ns"], r[prefix + "median_ns"], r[prefix + "max_ns"]
        self.assertGreater(lo, 0)
        self.assertLessEqual(lo, median)
        self.assertLessEqual(median, hi)

    def assert_common(self, r, fields):
        if r["op"] == "qlinear-matmul" and r["schedule"].startswith(("qmm.tiled", "qmm.parallel")):
            fields = fields + PEAK_FIELDS
            self.assertIsInstance(r["peak_method"], str)
            if r["isa"] == "portable":
                self.assertIsNone(r["peak_gops"])
            else:
                self.assertGreater(r["peak_gops"], 0)
        self.assertEqual(sorted(fields), sorted(r.keys()))
        self.assert_timing(r)
        self.assertLessEqual(r["q1_ns"], r["median_ns"])
        self.assertLessEqual(r["median_ns"], r["q3_ns"])
        self.assertGreaterEqual(r["repetitions"], 3)
        self.assertRegex(r["schedule"], SCHEDULE)
        self.assertEqual(r["threads"], len(os.sched_getaffinity(0)))
        self.assertIn(r["isa"], ["portable", "avx2", "avx512", "avx512_vnni", "amx"])

    def test_scans(self):
        cases = [
            ("cumsum", [64, 100], "float32", 1, []),
            ("cumsum", [3000], "float16", 0, ["--direction", "decreasing"]),
            ("cumprod", [50, 40], "int32", 0, ["--exclusive"]),
            ("cumprod", [2, 3, 40], "uint64", 1, ["--direction", "decreasing", "--exclusive"]),
            ("cumsum", [64, 100], "float64", -1, []),
            ("cumprod", [3, 500], "bfloat16", -2, ["--exclusive"]),
        ]
        for op, shape, dtype, axis, extra in cases:
            with self.subTest(op=op, shape=shape, dtype=dtype):
                r = self.record(op, "--shape", ",".join(map(str, shape)), "--dtype", dtype, "--axis", axis, *extra)
                self.assert_common(r, SCAN_FIELDS)
                self.assertEqual((r["op"], r["shape"], r["dtype"], r["axis"]), (op, shape, dtype, axis))
                self.assertEqual(r["direction"], "decreasing" if "decreasing" in extra else "increasing")
                self.assertEqual(r["exclusive"], "--exclusive" in extra)
                count = 1
                for s in shape:
                    count *= s
                self.assertEqual(r["bytes"], 2 * count * SIZES[dtype])
                self.assert_timing(r, "copy_")
                self.assertIn(r["copy_method"], ["streaming", "memcpy"])
                self.assertAlmostEqual(r["gbps"], r["bytes"] / r["median_ns"])
                self.assertAlmostEqual(r["time_vs_baseline"], r["median_ns"] / r["copy_median_ns"])

    def test_table_shows_sub_microsecond_times(self):
        # Three decimals of milliseconds printed a tiny call as 0.000.
        r = run("cumsum", "--dtype", "float32", "--shape", "4", "--axis", "0", *QUICK)
        self.assertEqual(r.returncode, 0, r.stderr)
        row = next(line for line in r.stdout.splitlines() if line.split()[:1] == ["hetkern"])
        self.assertGreater(float(row.split()[1]), 0, r.stdout)

    def test_reported_schedule_is_accepted_and_reported_back(self):
        for op, shape in [("cumsum", "300,200"), ("cumprod", "100000")]:
            with self.subTest(op=op):
                chosen = self.record(op, "--shape", shape, "--dtype", "float32", "--axis", 0)["schedule"]
                again = self.record(op, "--shape", shape, "--dtype", "float32", "--axis", 0, "--schedule", chosen)
                self.assertEqual(again["schedule"], chosen)
        chosen = self.record("qlinear-matmul", "--shape", "40,30,20")["schedule"]
        again = self.record("qlinear-matmul", "--shape", "40,30,20", "--schedule", chosen)
        self.assertEqual(again["schedule"], chosen)

    def test_threads_and_isa(self):
        r = self.record("cumsum", "--shape", "1000", "--dtype", "int32", "--axis", 0, "--threads", 1,
                        "--isa", "portable", "--schedule", "scan.tiled")
        self.assertEqual((r["threads"], r["isa"], r["schedule"]), (1, "portable", "scan.tiled"))
        q = self.record("qlinear-matmul", "--shape", "16,16,16", "--threads", 1, "--isa", "portable")
        self.assertEqual((q["threads"], q["isa"]), (1, "portable"))

    def test_quantized_matmul_against_onednn(self):
        r = self.record("qlinear-matmul", "--shape", "33,70,200", "--b-range", "-64,63")
        self.assert_common(r, QMM_FIELDS)
        self.assertEqual((r["op"], r["shape"], r["dtype"], r["b_range"]),
                         ("qlinear-matmul", [33, 70, 200], "uint8,int8,uint8", [-64, 63]))
        self.assertEqual(r["ops"], 2 * 33 * 70 * 200)
        self.assertEqual((r["packed_b"], r["b_layout"]), (False, "rows"))
        self.assertAlmostEqual(r["gops"], r["ops"] / r["median_ns"])
        if r["onednn_version"] is None:  # a build without libdnnl-dev
            self.assertIn("oneDNN", r["onednn_reason"])
            self.assertIsNone(r["onednn_median_ns"])
            return
        self.assertIsNone(r["onednn_reason"])
        self.assert_timing(r, "onednn_")
        self.assertEqual(r["onednn_mismatches"], 0)
        self.assertAlmostEqual(r["time_vs_baseline"], r["median_ns"] / r["onednn_median_ns"])

    def test_constant_weights_packed_once_on_both_sides(self):
        # oneDNN's reordered B must give the same outputs as hetkern's pack_b: both exact in range.
        for types in ["u8,s8,u8", "s8,s8,s8"]:
            r = self.record("qlinear-matmul", "--shape", "33,70,200", "--types", types, "--b-range", "-64,63",
                            "--packed-b")
            self.assert_common(r, QMM_FIELDS)
            self.assertIs(r["packed_b"], True)
            if r["onednn_version"] is not None:
                self.assertEqual(r["onednn_mismatches"], 0)
                self.assertAlmostEqual(r["time_vs_baseline"], r["median_ns"] / r["onednn_median_ns"])

    def test_b_with_contiguous_columns(self):
        # B held as its transpose (PyTorch's Linear weight) by both libraries: over random B, 0
        # mismatches means both read element (k, n) from the same place, packed once or per call.
        for types, extra in [("u8,s8,u8", []), ("s8,s8,s8", []), ("u8,s8,u8", ["--packed-b"])]:
            with self.subTest(types=types, extra=extra):
                r = self.record("qlinear-matmul", "--shape", "33,70,200", "--types", types, "--b-range", "-64,63",
                                "--b-layout", "columns", *extra)
                self.assert_common(r, QMM_FIELDS)
                self.assertEqual((r["b_layout"], r["packed_b"]), ("columns", bool(extra)))
                if r["onednn_version"] is not None:
                    self.assertEqual(r["onednn_mismatches"], 0)

    def test_roof_only_for_the_host_kernels(self):
        host = self.record("qlinear-matmul", "--shape", "16,16,16", "--schedule", "qmm.tiled")
        self.assertGreater(host["peak_gops"], 0)
        instruction = {"amx": "tdpbusd", "avx512_vnni": "vpdpbusd", "avx512": "vpmaddubsw", "avx2": "vpmaddubsw"}
        self.assertIn(instruction[host["isa"]], host["peak_method"])
        portable = self.record("qlinear-matmul", "--shape", "16,16,16", "--schedule", "qmm.tiled", "--isa", "portable")
        self.assertIsNone(portable["peak_gops"])
        other = self.record("qlinear-matmul", "--shape", "16,16,16", "--schedule", "reference")
        self.assertNotIn("peak_gops", other)
        self.assert_common(other, QMM_FIELDS)

    def test_case_onednn_cannot_run_is_null_with_a_reason(self):
        r = self.record("qlinear-matmul", "--shape", "8,8,8", "--types", "s8,u8,s8")
        self.assertEqual((r["dtype"], r["b_range"], r["a_zero_point"]), ("int8,uint8,int8", [0, 255], 0))
        self.assertGreater(r["median_ns"], 0)
        for key in ["onednn_median_ns", "onednn_mismatches", "time_vs_baseline"]:
            self.assertIsNone(r[key])
        self.assertIsInstance(r["onednn_reason"], str)

    def test_table(self):
        result = run("cumsum", "--shape", "100,100", "--dtype", "float32", "--axis", 1, *QUICK)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("hetkern time / copy time:", result.stdout)
        result = run("qlinear-matmul", "--shape", "20,20,20", "--schedule", "qmm.tiled", *QUICK)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("hetkern", result.stdout)
        self.assertIn("oneDNN", result.stdout)
        self.assertRegex(result.stdout, r"roof [0-9.]+ GOPS \(.+\): hetkern at [0-9]+%")

    def test_bad_input(self):
        scan = ["cumsum", "--shape", "4,5", "--dtype", "float32", "--axis", "1"]
        qmm = ["qlinear-matmul", "--shape", "4,5,6"]
        cases = [
            ([], "operator"),
            (["transpose"], "transpose"),
            (["cumsum", "--dtype", "float32", "--axis", "0"], "--shape"),
            (["cumsum", "--shape", "4,0", "--dtype", "float32", "--axis", "0"], "--shape: expected a whole number of at least 1, got 0"),
            # CLI11 clamped a size past int64 to its bound and reported the clamped value.
            (["cumsum", "--shape", "4,99999999999999999999", "--dtype", "float32", "--axis", "0"],
             "got 99999999999999999999"),
            (scan[:-1] + ["1.5"], "--axis: expected a whole number"),
            # CLI11's range check reported text that is not a number as out of range.
            (scan + ["--threads", "abc"], "--threads: expected a whole number from 1 to"),
            (scan + ["--min-reps", "99999999999"], "got 99999999999"),
            (scan + ["--threads", ""], "--threads: expected a whole number from 1 to 1024, got an empty value"),
            (qmm + ["--b-range", "1,x"], "--b-range: expected a whole number"),
            (["cumsum", "--shape", "4,x", "--dtype", "float32", "--axis", "0"], "shape"),
            # Empty sizes were dropped and a second --shape joined onto the first.
            (["cumsum", "--shape", "4,,5", "--dtype", "float32", "--axis", "0"], "got an empty one in '4,,5'"),
            (["cumsum", "--shape", "4,", "--dtype", "float32", "--axis", "0"], "got an empty one in '4,'"),
            (scan + ["--shape", "7"], "--shape"),
            (qmm + ["--shape", "4,5,6"], "--shape"),
            (qmm + ["--types", "u8,,s8,u8"], "--types: expected a value, got an empty one"),
            (qmm + ["--b-range", "1,"], "--b-range: expected a value, got an empty one"),
            (["cumsum", "--shape", "4,5", "--dtype", "float128", "--axis", "0"], "float128"),
            (["cumsum", "--shape", "4,5", "--dtype", "int8", "--axis", "0"], "int8"),
            (["cumsum", "--shape", "4,5", "--dtype", "float32", "--axis", "2"], "axis"),
            (["cumsum", "--shape", "4,5", "--dtype", "float32", "--axis", "-3"], "axis"),
            (["cumsum", "--shape", "4,5", "--dtype", "float64", "--axis", "0", "--schedule", "scan.offload_rows"],
             "scan.offload_rows"),
            (scan + ["--direction", "sideways"], "sideways"),
            (scan + ["--schedule", "scan.tiled("], "schedule"),
            (scan + ["--schedule", "qmm.tiled"], "qmm.tiled"),
            (scan + ["--threads", "0"], "threads"),
            # OpenMP aborted the process where it could not start the threads asked for.
            (scan + ["--threads", "65536"], "threads"),
            (qmm + ["--threads", "40000"], "threads"),
            (scan + ["--isa", "sse9"], "sse9"),
            (scan + ["--min-reps", "0"], "min-reps"),
            (["qlinear-matmul", "--shape", "4,5"], "M,N,K"),
            (qmm + ["--types", "u8,s8"], "--types"),
            (qmm + ["--types", "u8,f32,u8"], "float32"),
            (qmm + ["--b-range", "10,5"], "b_range"),
            (qmm + ["--b-range", "-200,0"], "b_range"),
            (qmm + ["--b-range", "1"], "--b-range"),
            (qmm + ["--b-layout", "diagonal"], "--b-layout: diagonal not in {rows,columns}"),
            (qmm + ["--schedule", "scan.tiled"], "scan.tiled"),
        ]
        # nan and inf passed CLI11's check of --min-time, and nan never ended the timing loop.
        for value in ("nan", "inf", "-1", "1e9", "x"):
            cases.append((scan + ["--min-reps", "3", "--min-time", value], "--min-time"))
        for args, phrase in cases:
            with self.subTest(args=args):
                result = run(*args, *(QUICK if args and "--min-time" not in args else []))
                self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
                self.assertEqual(result.stdout, "")
                self.assertEqual(result.stderr.count("\n"), 1, result.stderr)
                self.assertIn(phrase, result.stderr)


if __name__ == "__main__":
    HETKERN = sys.argv.pop(1)
    unittest.main(verbosity=1)
