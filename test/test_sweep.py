#!/usr/bin/python3
"""`hetkern bench --sweep`: a tiny SPEC runs every applicable schedule at every thread count (the
plan recomputed here from `hetkern info`), the records are complete and consistent (rates from
times and sizes, spreads ordered, baselines present), results.csv holds exactly the records of
results.json, numpy is measured as a peer, summary.md has a row per record, the plots are PNGs, bad
SPEC lines are refused with their line number, a non-empty --out is refused without --force, Ctrl-C
keeps what finished and exits 130, qmm.png marks oneDNN's wrong results and summary.md the default.
usage: test_sweep.py PATH/TO/hetkern
"""
import copy
import csv
import importlib.util
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HETKERN = None
QUICK = ["--min-time", "0", "--min-reps", "3"]
SPEC = """# a tiny sweep
cumsum 1000 float32 axis=0
cumprod 8,300 float32 axis=1 exclusive   # a comment after a case
qlinear-matmul 20,32,40 u8,s8,u8 b_range=-64,63
"""
SIZES = {"float16": 2, "float32": 4, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8}
TIMING = ["median_ns", "min_ns", "q1_ns", "q3_ns", "max_ns", "repetitions"]
SWEEP_FIELDS = ["case", "case_line", "kind", "peer", "strategy", "device", "pin", "op", "shape", "dtype",
                "schedule", "threads", "isa", *TIMING, "time_vs_baseline", "median_with_transfers_ns",
                "median_without_transfers_ns"]


def strategies_from_info():
    """{"scan": {strategy: [params]}, "qmm": {...}} as `hetkern info` lists them."""
    text = subprocess.run([HETKERN, "info"], capture_output=True, text=True, check=True).stdout
    out, family, name = {}, None, None
    for line in text.splitlines():
        if line.startswith("schedules of "):
            family = "qmm" if "qlinear-matmul" in line else "scan"
            out[family] = {}
        elif family and re.match(r"^  [a-z][a-z0-9_.]*$", line):
            name = line.strip()
            out[family][name] = []
        elif family and name and re.match(r"^      [a-z_]+ = ", line):
            out[family][name].append(line.split()[0])
    return out


def sweep(spec_text, out, *args):
    spec = os.path.join(out, "cases.txt")
    with open(spec, "w") as f:
        f.write(spec_text)
    return subprocess.run([HETKERN, "bench", "--sweep", spec, "--out", os.path.join(out, "result"), *args],
                          capture_output=True, text=True, timeout=300)


def cell(v, key=None):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ("," if key == "b_range" else "x").join(map(str, v))
    return str(v)


def threads_cell(r):
    """The summary's threads: the budget, and the threads a hetkern host schedule runs where fewer."""
    if not r["threads"]:
        return ""
    if r["kind"] != "hetkern" or r["device"] != "host":
        return str(r["threads"])
    m = re.search(r"threads=(\d+)", r["schedule"])
    runs = int(m.group(1)) if m else 1
    return f"{r['threads']} (runs {runs})" if runs < r["threads"] else str(r["threads"])


class Sweep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.result = sweep(SPEC, cls.tmp.name, "--threads", "1,2", *QUICK)
        cls.dir = os.path.join(cls.tmp.name, "result")
        if cls.result.returncode == 0:
            with open(os.path.join(cls.dir, "results.json")) as f:
                cls.res = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)

    def hetkern_records(self):
        return [r for r in self.res["records"] if r["kind"] == "hetkern"]

    def test_plan_is_every_applicable_schedule_at_every_thread_count(self):
        info = strategies_from_info()
        gpu = self.res["machine"]["gpu_devices"] > 0
        expected = []
        for line, family in ((2, "scan"), (3, "scan"), (4, "qmm")):
            expected += [(line, "default", t) for t in (1, 2)]
            for name, params in info[family].items():
                on_gpu = "offload" in name or ".devices" in name
                if name == "reference" or (on_gpu and not gpu):
                    continue
                counts = (1, 2) if "threads" in params and not on_gpu else (1,)
                expected += [(line, name, t) for t in counts]
        got = [(r["case_line"], r["strategy"], r["threads"]) for r in self.hetkern_records()]
        self.assertEqual(sorted(got), sorted(expected))
        self.assertEqual(self.res["planned"], len(expected))
        self.assertFalse(self.res["interrupted"])
        for r in self.hetkern_records():
            if r["strategy"] != "default":
                self.assertTrue(r["schedule"].startswith(r["strategy"]), r)
            if "threads=" in r["schedule"]:
                self.assertIn(f"threads={r['threads']}", r["schedule"])

    def test_records_are_complete_and_consistent(self):
        for r in self.hetkern_records():
            for key in SWEEP_FIELDS:
                self.assertIn(key, r)
            self.assertEqual(r["device"], "host")
            self.assertIsNone(r["pin"])
            self.assertLessEqual(r["min_ns"], r["q1_ns"])
            self.assertLessEqual(r["q1_ns"], r["median_ns"])
            self.assertLessEqual(r["median_ns"], r["q3_ns"])
            self.assertLessEqual(r["q3_ns"], r["max_ns"])
            self.assertGreaterEqual(r["repetitions"], 3)
            if r["op"] == "qlinear-matmul":
                m, n, k = r["shape"]
                self.assertEqual(r["ops"], 2 * m * n * k)
                self.assertAlmostEqual(r["gops"], r["ops"] / r["median_ns"], delta=1e-9 * r["gops"])
                self.assertEqual((r["b_range"], r["b_layout"]), ([-64, 63], "rows"))
                if r["onednn_gops"] is not None:
                    self.assertEqual(r["onednn_mismatches"], 0)
                    self.assertAlmostEqual(r["time_vs_baseline"], r["median_ns"] / r["onednn_median_ns"])
                self.assertIn("peak_gops", r)
                peak = next(p for p in self.res["peaks"] if p["threads"] == r["threads"])
                self.assertEqual(r["peak_gops"], peak["gops"])
            else:
                self.assertEqual(r["bytes"], 2 * math.prod(r["shape"]) * SIZES[r["dtype"]])
                self.assertAlmostEqual(r["gbps"], r["bytes"] / r["median_ns"], delta=1e-9 * r["gbps"])
                self.assertAlmostEqual(r["copy_gbps"], r["bytes"] / r["copy_median_ns"], delta=1e-9 * r["gbps"])
                self.assertAlmostEqual(r["time_vs_baseline"], r["median_ns"] / r["copy_median_ns"])
        self.assertGreater(self.res["machine"]["clock_ghz"], 0.1)

    def test_numpy_is_a_peer(self):
        numpy = next(p for p in self.res["peers"] if p["name"] == "numpy")
        self.assertTrue(numpy["available"], numpy)
        peers = [r for r in self.res["records"] if r["peer"] == "numpy"]
        # The inclusive scan has a numpy record at one thread with the copy of that thread count;
        # numpy has no exclusive scan, which is reported as skipped.
        self.assertEqual([r["case_line"] for r in peers], [2])
        r = peers[0]
        self.assertEqual((r["kind"], r["threads"], r["device"]), ("peer", 1, "host"))
        copy = [h["copy_median_ns"] for h in self.hetkern_records() if h["case_line"] == 2 and h["threads"] == 1]
        self.assertIn(r["copy_median_ns"], copy)
        self.assertTrue(any(s["schedule"] == "numpy" and "exclusive" in s["reason"] for s in self.res["skipped"]))
        torch = next(p for p in self.res["peers"] if p["name"] == "torch")
        self.assertTrue(torch["available"] or torch["reason"])

    def test_csv_holds_the_records(self):
        with open(os.path.join(self.dir, "results.csv")) as f:
            rows = list(csv.DictReader(f))
        records = self.res["records"]
        self.assertEqual(len(rows), len(records))
        for row, r in zip(rows, records):
            for key, value in row.items():
                expected = r.get(key)
                if isinstance(expected, float):
                    self.assertAlmostEqual(float(value), expected, delta=1e-12 * abs(expected))
                else:
                    self.assertEqual(value, cell(expected, key), key)
            self.assertTrue(set(r) <= set(row), set(r) - set(row))

    def test_summary_has_a_row_per_record_and_marks_the_default(self):
        with open(os.path.join(self.dir, "summary.md")) as f:
            text = f.read()
        rows = [line for line in text.splitlines() if line.startswith("| ") and " | host | " in line]
        host = [r for r in self.res["records"] if r["device"] == "host"]
        self.assertEqual(len(rows), len(host))
        for r in host:
            mark = " **(default)**" if r["kind"] == "hetkern" and r["strategy"] == "default" else ""
            self.assertIn(f"| {r['case']} | {r['schedule']}{mark} | host | {threads_cell(r)} |", text)
        # The tiny matmul's own choice at a budget of two threads is a one-thread schedule: said so.
        self.assertTrue(any("(runs 1)" in row for row in rows), text)
        for r in self.res["records"]:
            if r["op"] == "qlinear-matmul":
                self.assertEqual(r["b_range"], [-64, 63])
        defaults = [r for r in host if r["kind"] == "hetkern" and r["strategy"] == "default"]
        self.assertEqual(sum("**(default)** | host |" in row for row in rows), len(defaults))
        if self.res["machine"]["gpu_devices"] == 0:
            self.assertIn("No GPU records", text)

    def test_plots_are_pngs(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib is not installed (python3-matplotlib): plots not checked")
        for name in ("scans.png", "qmm.png", "scaling.png"):
            with open(os.path.join(self.dir, name), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "cpu_gpu.png")))

    def test_plot_works_standalone_and_draws_gpu_records(self):
        """plot.py on a copy of results.json, to which records of a GPU peer were added (scaled
        from the host's times: only the drawing is under test), writes the same CSV and adds the
        CPU-against-GPU plot and table."""
        plot = os.path.join(os.path.dirname(HETKERN), "..", "share", "hetkern", "bench", "plot.py")
        res = json.loads(json.dumps(self.res))
        for r in [r for r in res["records"] if r["case_line"] == 2 and r["strategy"] == "default"]:
            res["records"].append(dict(r, kind="peer", peer="torch", strategy="torch", device="gpu",
                                       schedule="torch.cumsum(cuda)", median_without_transfers_ns=r["median_ns"] / 4,
                                       median_with_transfers_ns=r["median_ns"] * 4))
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "results.json"), "w") as f:
                json.dump(res, f)
            result = subprocess.run([sys.executable, plot, os.path.join(tmp, "results.json")],
                                    capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(tmp, "results.csv")) as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), len(res["records"]))
            with open(os.path.join(tmp, "summary.md")) as f:
                summary = f.read()
            # Each GPU record: a row of the scans' table and one of the CPU-against-GPU table.
            added = sum(r["device"] == "gpu" for r in res["records"])
            self.assertEqual(added, 2)
            self.assertEqual(summary.count("| torch.cumsum(cuda) |"), 2 * added)
            self.assertNotIn("No GPU records", summary)
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                return
            with open(os.path.join(tmp, "cpu_gpu.png"), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


    def test_qmm_plot_and_summary_mark_wrong_onednn_results(self):
        """Records whose oneDNN outputs differed (as oneDNN with full-range weights on AVX2 does)
        are drawn as wrong on qmm.png itself and called wrong in summary.md; without such records
        nothing is marked."""
        top = max(r["threads"] for r in self.hetkern_records() if r["op"] == "qlinear-matmul")
        marked = copy.deepcopy(self.res)
        wrong = [r for r in marked["records"] if r["kind"] == "hetkern" and r["op"] == "qlinear-matmul"
                 and r["threads"] == top and r.get("onednn_gops")]
        if not wrong:
            self.skipTest("no oneDNN baseline in this build")
        for r in wrong:
            r["onednn_mismatches"] = 1234
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "results.json")
            with open(path, "w") as f:
                json.dump(marked, f)
            result = subprocess.run([sys.executable, plot_script(), path], capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(tmp, "summary.md")) as f:
                summary = f.read()
        self.assertIn("**oneDNN gave wrong results** in 1 case(s)", summary)
        qmm_rows = [line for line in summary.splitlines() if line.startswith(f"| {wrong[0]['case']} |")]
        self.assertEqual(sum("| wrong results |" in row for row in qmm_rows), len(wrong))
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return
        plot = load_plot_module()
        for res, expect_wrong in ((marked, True), (self.res, False)):
            kept = KeepFigures(plt)
            with tempfile.TemporaryDirectory() as tmp:
                plot.plot_qmm(kept, res, os.path.join(tmp, "qmm.png"))
            ax = kept.figures[0].axes[0]
            notes = [t.get_text() for t in ax.texts]
            crosses = [line for line in ax.get_lines() if "WRONG" in line.get_label()]
            if not expect_wrong:
                self.assertEqual((notes, crosses), ([], []))
                plt.close("all")
                continue
            self.assertEqual(notes, ["oneDNN wrong\n1234 outputs differ"])
            self.assertEqual(len(crosses), 1)
            cases = plot.case_order([r for r in res["records"] if r["op"] == "qlinear-matmul"])
            self.assertEqual(list(crosses[0].get_xdata()), [cases.index(wrong[0]["case"])])
            self.assertEqual(list(crosses[0].get_ydata()), [max(r["onednn_gops"] for r in wrong)])
            self.assertIn("wrong results", ax.get_title())
            plt.close("all")


def plot_script():
    return os.path.join(os.path.dirname(HETKERN), "..", "share", "hetkern", "bench", "plot.py")


def load_plot_module():
    spec = importlib.util.spec_from_file_location("hetkern_plot", plot_script())
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class KeepFigures:
    """matplotlib.pyplot for plot.py's drawing functions, except that figures stay open to be read."""

    def __init__(self, plt):
        self.plt, self.figures = plt, []

    def subplots(self, *args, **kwargs):
        fig, ax = self.plt.subplots(*args, **kwargs)
        self.figures.append(fig)
        return fig, ax

    def close(self, *args):
        pass

    def __getattr__(self, name):
        return getattr(self.plt, name)


class Options(unittest.TestCase):
    def test_fixed_schedule_and_pins(self):
        info = strategies_from_info()
        with tempfile.TemporaryDirectory() as tmp:
            result = sweep("cumsum 5000 float32 axis=0\n", tmp, "--schedule", "scan.parallel(threads=1);scan.tiled",
                           "--threads", "2", "--pin", "compact", "--no-peers", *QUICK)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(tmp, "result", "results.json")) as f:
                res = json.load(f)
        got = sorted((r["strategy"], r["threads"], r["pin"]) for r in res["records"])
        pin = lambda name: "compact" if "pin" in info["scan"][name] else None  # noqa: E731
        self.assertEqual(got, sorted([("scan.parallel", 1, pin("scan.parallel")), ("scan.tiled", 1, pin("scan.tiled"))]))
        self.assertEqual(res["peers"], [])

    def test_b_with_contiguous_columns(self):
        """b_layout=columns gives hetkern and oneDNN B as its transpose; the same outputs from both
        (0 mismatches over random B) show that both read element (k, n) where it lies."""
        with tempfile.TemporaryDirectory() as tmp:
            result = sweep("qlinear-matmul 20,32,40 u8,s8,u8 b_range=-64,63 b_layout=columns\n"
                           "qlinear-matmul 17,5,70 s8,s8,s8 b_layout=rows b_range=-64,63\n", tmp,
                           "--schedule", "qmm.tiled", "--threads", "1", "--no-peers", *QUICK)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(tmp, "result", "results.json")) as f:
                res = json.load(f)
        self.assertEqual([(r["shape"], r["b_layout"]) for r in res["records"]],
                         [([20, 32, 40], "columns"), ([17, 5, 70], "rows")])
        for r in res["records"]:
            if r["onednn_version"] is not None:
                self.assertEqual(r["onednn_mismatches"], 0)

    def test_a_schedule_illegal_for_a_case_is_skipped_with_the_reason(self):
        if "scan.split" not in strategies_from_info()["scan"]:
            self.skipTest("a build without offload has no scan.split")
        with tempfile.TemporaryDirectory() as tmp:
            # scan.split's devices take no float64 (the float32 case runs it, the host fallback
            # for the devices where there is no GPU).
            result = sweep("cumsum 5000 float64 axis=0\ncumsum 5000 float32 axis=0\n", tmp, "--schedule",
                           "scan.split;scan.tiled", "--threads", "1", "--no-peers", *QUICK)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("1 skipped", result.stdout)
            with open(os.path.join(tmp, "result", "results.json")) as f:
                res = json.load(f)
        self.assertEqual(sorted((r["dtype"], r["strategy"]) for r in res["records"]),
                         [("float32", "scan.split"), ("float32", "scan.tiled"), ("float64", "scan.tiled")])
        self.assertEqual(len(res["skipped"]), 1)
        self.assertIn("float64", res["skipped"][0]["reason"])

    def test_new_scan_types_and_negative_axes(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = sweep("cumsum 4,500 float64 axis=-1\ncumprod 3000 bfloat16 axis=0 exclusive\n", tmp,
                           "--schedule", "scan.tiled", "--threads", "1", "--no-peers", *QUICK)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(tmp, "result", "results.json")) as f:
                res = json.load(f)
        got = sorted((r["dtype"], r["shape"], r["axis"], r["bytes"]) for r in res["records"])
        self.assertEqual(got, [("bfloat16", [3000], 0, 2 * 3000 * 2), ("float64", [4, 500], 1, 2 * 2000 * 8)])

    def test_bad_spec_lines_name_the_line(self):
        cases = [("cumsum 100 float32\n", "1", "axis"),
                 ("# fine\ncumsum 100 float32 axis=1\n", "2", "axis"),
                 ("cumsum 100 float32 axis=0\nfrobnicate 3 float32\n", "2", "unknown operator"),
                 ("\n\ncumsum 10,x float32 axis=0\n", "3", "integers"),
                 ("qlinear-matmul 2,3 u8,s8,u8\n", "1", "M,N,K"),
                 ("qlinear-matmul 2,3,4 u8,f32,u8\n", "1", "u8 or s8"),
                 ("cumsum 100 int8 axis=0\n", "1", "scans take"),
                 ("cumsum 100 float64 axis=-2\n", "1", "axis"),
                 ("cumsum 100 float32 axis=0 sideways\n", "1", "unknown scan option"),
                 ("cumsum 100 float32 axis=0 axis=1\n", "1", "twice"),
                 ("qlinear-matmul 8,8,8 u8,s8,u8 b_range=100,-100\n", "1", "b_range"),
                 ("qlinear-matmul 8,8,8 u8,s8,u8 b_range=-1000,1000\n", "1", "b_range"),
                 ("qlinear-matmul 8,8,8 u8,s8,u8 b_range=-4294967296,4294967295\n", "1", "b_range"),
                 ("qlinear-matmul 8,8,8 u8,s8,u8 b_range=0,1 b_range=0,2\n", "1", "twice"),
                 ("qlinear-matmul 8,8,8 u8,s8,u8 b_layout=diagonal\n", "1", "rows or columns, got 'diagonal'"),
                 ("qlinear-matmul 8,8,8 u8,s8,u8 b_layout=rows b_layout=columns\n", "1", "b_layout given twice"),
                 ("qlinear-matmul 8,8,8 u8,s8,u8 b_lay=rows\n", "1", "b_layout=rows|columns"),
                 ("cumsum 8,8 float32 axis=1\nqlinear-matmul 8,8,0 u8,s8,u8\n", "2", "must be positive"),
                 ("qlinear-matmul -1,8,8 u8,s8,u8\n", "1", "must be positive"),
                 ("qlinear-matmul 4294967296,4294967296,8 u8,s8,u8\n", "1", "62 bits"),
                 ("cumsum 1,1,1,1,1,1,1,1,1 float32 axis=1\n", "1", "at most 8 sizes"),
                 ("cumsum 4294967296,4294967296 float32 axis=1\n", "1", "63 bits"),
                 # The file's bytes reach the terminal escaped, never as a control sequence.
                 ("\x1b[2Jsum 4 float32 axis=0\n", "1", "unknown operator '\\x1b[2Jsum'"),
                 ("# nothing\n", None, "no case")]
        for text, line, words in cases:
            with self.subTest(text=text), tempfile.TemporaryDirectory() as tmp:
                result = sweep(text, tmp, *QUICK)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                if line:
                    self.assertIn(f"cases.txt:{line}:", result.stderr)
                self.assertIn(words, result.stderr)
                self.assertFalse(os.path.exists(os.path.join(tmp, "result")))

    def test_bad_options(self):
        with tempfile.TemporaryDirectory() as tmp:
            for args in (["--sweep", "nonesuch"], ["--sweep", "small", "--schedule", "scan.nonesuch"],
                         ["--sweep", "small", "--schedule", "scan.parallel("], ["--min-time", "1"],
                         ["--sweep", "small", "--threads", "0"], ["--sweep", "small", "--pin", "bogus"],
                         ["--sweep", "small", "--threads", "1,,2"], ["--sweep", "small", "--pin", "compact,"],
                         ["--sweep", "small", "--threads", "1", "--threads", "2"],
                         ["--sweep", "small", "--schedule", "scan.tiled(tile=0)"],
                         ["--sweep", "small", "--schedule", "scan.tiled(foo=1)"],
                         ["--sweep", "small", "--schedule", "scan.parallel(pin=sideways)"]):
                with self.subTest(args=args):
                    result = subprocess.run([HETKERN, "bench", *args, "--out", os.path.join(tmp, "x")],
                                            capture_output=True, text=True, timeout=60)
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                    self.assertFalse(os.path.exists(os.path.join(tmp, "x")))

    def test_a_python_that_does_not_start_stops_the_sweep_first(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "x")
            env = dict(os.environ, HETKERN_PYTHON=os.path.join(tmp, "no-python"))
            result = subprocess.run([HETKERN, "bench", "--sweep", "small", "--out", out, *QUICK],
                                    capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
            self.assertIn("no-python", result.stderr)
            self.assertFalse(os.path.exists(out))

    def test_sweep_and_an_operator_exclude_each_other(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = subprocess.run([HETKERN, "bench", "--sweep", "small", "--out", os.path.join(tmp, "x"),
                                     "cumsum", "--shape", "10", "--dtype", "float32", "--axis", "0"],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual((result.returncode, result.stdout), (2, ""))
            self.assertIn("--sweep", result.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "x")))

    @staticmethod
    def start_long_sweep(tmp, min_time):
        """A sweep of 40 small cases into tmp/result, running in the background; returns it and
        its output folder."""
        spec = os.path.join(tmp, "cases.txt")
        with open(spec, "w") as f:
            f.write("cumsum 4096 float32 axis=0\n" * 40)
        out = os.path.join(tmp, "result")
        proc = subprocess.Popen([HETKERN, "bench", "--sweep", spec, "--out", out, "--threads", "1",
                                 "--min-time", min_time, "--no-peers"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return proc, out

    def test_interrupt_keeps_what_finished(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc, out = self.start_long_sweep(tmp, "0.05")
            seen = ""
            while "[3/" not in seen:
                line = proc.stderr.readline()
                self.assertTrue(line, "sweep ended before its third measurement")
                seen += line
            proc.send_signal(signal.SIGINT)
            stdout, _ = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 130)
            self.assertIn("interrupted", stdout)
            with open(os.path.join(out, "results.json")) as f:
                res = json.load(f)
            self.assertTrue(res["interrupted"])
            self.assertGreaterEqual(len(res["records"]), 2)
            self.assertLess(len(res["records"]), res["planned"])
            self.assertTrue(os.path.exists(os.path.join(out, "summary.md")))
            with open(os.path.join(out, "summary.md")) as f:
                self.assertIn("Interrupted (Ctrl-C)", f.read())

    def test_interrupt_while_the_report_is_written_lets_it_finish(self):
        """A Ctrl-C once every measurement is done (here: while plot.py starts) still leaves every
        output, and the sweep ends with 130; plot.py runs apart from the terminal's Ctrl-C."""
        with tempfile.TemporaryDirectory() as tmp:
            wrapper = os.path.join(tmp, "python")
            with open(wrapper, "w") as f:  # hetkern leads its own session: its group is its pid
                f.write("#!/usr/bin/python3\nimport os, signal, sys\n"
                        "if sys.argv[1:2] and sys.argv[1].endswith('plot.py'):\n"
                        "    os.killpg(os.getppid(), signal.SIGINT)\n"
                        "os.execv('/usr/bin/python3', ['/usr/bin/python3'] + sys.argv[1:])\n")
            os.chmod(wrapper, 0o755)
            spec = os.path.join(tmp, "cases.txt")
            with open(spec, "w") as f:
                f.write("cumsum 4096 float32 axis=0\n")
            out = os.path.join(tmp, "result")
            result = subprocess.run([HETKERN, "bench", "--sweep", spec, "--out", out, "--threads", "1", "--no-peers",
                                     *QUICK], capture_output=True, text=True, timeout=120, start_new_session=True,
                                    env=dict(os.environ, HETKERN_PYTHON=wrapper))
            self.assertEqual(result.returncode, 130, result.stderr)
            self.assertNotIn("Traceback", result.stderr)
            for name in ("results.json", "results.csv", "summary.md"):
                self.assertTrue(os.path.exists(os.path.join(out, name)), name)

    def test_second_interrupt_stops_at_once(self):
        """The first Ctrl-C lets the measurement under way finish (a second of it here); a second
        one ends the process before that, by the signal, with no results written."""
        with tempfile.TemporaryDirectory() as tmp:
            proc, out = self.start_long_sweep(tmp, "3")
            self.assertIn("[1/", proc.stderr.readline())
            proc.send_signal(signal.SIGINT)
            time.sleep(0.3)
            start = time.time()
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, -signal.SIGINT)
            self.assertLess(time.time() - start, 2)
            self.assertFalse(os.path.exists(os.path.join(out, "results.json")))

    def test_broken_optional_baselines_are_reported_and_skipped(self):
        """A matplotlib and a PyTorch that fail on import (shadowed here by modules that raise) cost
        the plots and the torch peer, each reported; the sweep still writes its results."""
        with tempfile.TemporaryDirectory() as tmp:
            fake = os.path.join(tmp, "site")
            for module, error in (("matplotlib", "RuntimeError('broken matplotlib')"),
                                  ("torch", "OSError('libcudart.so: cannot open shared object file')")):
                os.makedirs(os.path.join(fake, module))
                with open(os.path.join(fake, module, "__init__.py"), "w") as f:
                    f.write(f"raise {error}\n")
            env = dict(os.environ, PYTHONPATH=fake)
            spec = os.path.join(tmp, "cases.txt")
            with open(spec, "w") as f:
                f.write("cumsum 500 float32 axis=0\nqlinear-matmul 8,16,32 u8,s8,u8\n")
            out = os.path.join(tmp, "result")
            result = subprocess.run([HETKERN, "bench", "--sweep", spec, "--out", out, "--threads", "1", *QUICK],
                                    capture_output=True, text=True, timeout=300, env=env)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(os.path.join(out, "results.json")) as f:
                res = json.load(f)
            with open(os.path.join(out, "summary.md")) as f:
                summary = f.read()
            self.assertFalse([name for name in os.listdir(out) if name.endswith(".png")])
        torch = next(p for p in res["peers"] if p["name"] == "torch")
        self.assertFalse(torch["available"])
        self.assertIn("OSError: libcudart.so", torch["reason"])
        self.assertTrue(next(p for p in res["peers"] if p["name"] == "numpy")["available"])
        self.assertIn("No plots: matplotlib failed to load (RuntimeError: broken matplotlib)", summary)
        self.assertGreater(len(res["records"]), 0)

    def test_out_is_a_directory_whatever_its_name(self):
        with tempfile.TemporaryDirectory() as tmp:
            spec = os.path.join(tmp, "cases.txt")
            with open(spec, "w") as f:
                f.write("cumsum 500 float32 axis=0\n")
            common = ["bench", "--sweep", spec, "--threads", "1", "--no-peers", *QUICK]
            # '-' means standard output elsewhere; a sweep writes files, so it is refused before running.
            result = subprocess.run([HETKERN, *common, "--out", "-"], capture_output=True, text=True, timeout=60,
                                    cwd=tmp)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "-")))
            # A relative directory whose name starts with '-' is a directory like any other.
            result = subprocess.run([HETKERN, *common, "--out=-dash"], capture_output=True, text=True, timeout=300,
                                    cwd=tmp)
            self.assertEqual(result.returncode, 0, result.stderr)
            for name in ("results.json", "results.csv", "summary.md"):
                self.assertTrue(os.path.exists(os.path.join(tmp, "-dash", name)), name)

    def test_non_empty_out_is_refused_without_force(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result")
            os.makedirs(out)
            for name, text in (("notes.txt", "keep me"), ("cpu_gpu.png", "an earlier sweep's plot"),
                               ("holiday.png", "not a sweep's")):
                with open(os.path.join(out, name), "w") as f:
                    f.write(text)
            result = sweep("cumsum 500 float32 axis=0\n", tmp, "--threads", "1", "--no-peers", *QUICK)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
            self.assertIn("--force", result.stderr)
            self.assertEqual(sorted(os.listdir(out)), ["cpu_gpu.png", "holiday.png", "notes.txt"])
            result = sweep("cumsum 500 float32 axis=0\n", tmp, "--threads", "1", "--no-peers", "--force", *QUICK)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertTrue(os.path.exists(os.path.join(out, "results.json")))
            self.assertFalse(os.path.exists(os.path.join(out, "cpu_gpu.png")))
            # The closing line names this sweep's files only.
            self.assertIn("scans.png", result.stdout)
            self.assertNotIn("holiday.png", result.stdout)
            self.assertTrue(os.path.exists(os.path.join(out, "holiday.png")))
            with open(os.path.join(out, "notes.txt")) as f:
                self.assertEqual(f.read(), "keep me")
            # An empty directory needs no --force.
            empty = os.path.join(tmp, "empty")
            os.makedirs(empty)
            spec = os.path.join(tmp, "cases.txt")
            result = subprocess.run([HETKERN, "bench", "--sweep", spec, "--out", empty, "--threads", "1",
                                     "--no-peers", *QUICK], capture_output=True, text=True, timeout=300)
            self.assertEqual(result.returncode, 0, result.stderr)


if __name__ == "__main__":
    HETKERN = os.path.abspath(sys.argv.pop(1))
    unittest.main()
