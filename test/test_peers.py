#!/usr/bin/python3
"""bench/peers.py on its own: without PyTorch (an import that fails) it reports torch unavailable
with the reason and still measures numpy; with a stand-in torch (numpy underneath, so that the
path runs on machines without PyTorch) torch._int_mm on the CPU gives one record per requested
thread count, restores PyTorch's thread count, and skips what it cannot run with the reason.
usage: test_peers.py PATH/TO/peers.py
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

PEERS = None
TIMING = {"min_seconds": 0, "min_repetitions": 3}
SCAN = {"case": "cumsum 300 float32 axis=0", "case_line": 1, "op": "cumsum", "shape": [300], "dtype": "float32",
        "axis": 0, "direction": "increasing", "exclusive": False, "baselines": []}
# A qlinear-matmul case as `hetkern bench --sweep` and tools/cpu-report.sh pass it: the quantization
# of hetkern's record of it.
QMM = {"case": "qlinear-matmul 20,24,40 u8,s8,u8", "case_line": 2, "op": "qlinear-matmul", "shape": [20, 24, 40],
       "dtype": "uint8,int8,uint8", "b_range": [-64, 63], "a_scale": 0.0078125, "a_zero_point": 128,
       "b_scale": 0.0078125, "out_scale": 0.0625, "out_zero_point": 128}

# Just the part of PyTorch that peers.py calls, on numpy arrays.
STAND_IN = textwrap.dedent('''
    import os
    import numpy as np
    __version__ = "0.0-stand-in"
    int8, uint8, int32, float32 = np.int8, np.uint8, np.int32, np.float32
    _threads = [4]
    calls = []

    class cuda:
        @staticmethod
        def is_available():
            return False

    class Tensor:
        def __init__(self, a):
            self.a = np.asarray(a)
        def float(self):
            return Tensor(self.a.astype(np.float32))
        def __mul__(self, x):
            return Tensor(self.a * np.float32(x))
        def __add__(self, x):
            return Tensor(self.a + x)
        def clamp_(self, lo, hi):
            np.clip(self.a, lo, hi, out=self.a)
            return self
        def to(self, dtype):
            return Tensor(self.a.astype(dtype))
        def numel(self):
            return self.a.size
        def element_size(self):
            return self.a.itemsize
        def t(self):
            return Tensor(self.a.T)

    class Generator:
        def __init__(self, device):
            self.rng = np.random.default_rng(0)
        def manual_seed(self, seed):
            self.rng = np.random.default_rng(seed)
            return self

    class iinfo:
        def __init__(self, dtype):
            self.min, self.max = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)

    def randint(lo, hi, shape, dtype, device, generator):
        assert np.iinfo(dtype).min <= lo and hi - 1 <= np.iinfo(dtype).max, (lo, hi, dtype)
        return Tensor(generator.rng.integers(lo, hi, shape).astype(dtype))

    def _int_mm(a, b):
        assert a.a.dtype == np.int8 and b.a.dtype == np.int8
        columns = b.a.strides[0] == b.a.itemsize
        assert columns == (os.environ.get("EXPECT_B_LAYOUT") == "columns"), ("B's strides", b.a.strides)
        calls.append(_threads[0])
        return Tensor(a.a.astype(np.int32) @ b.a.astype(np.int32))

    def round(t):
        return Tensor(np.round(t.a))

    def get_num_threads():
        return _threads[0]

    def set_num_threads(n):
        _threads[0] = n

    def from_numpy(x):
        return Tensor(x)

    def empty_like(t):
        return Tensor(np.empty_like(t.a))

    def cumsum(x, axis, out):
        np.cumsum(x.a, axis=axis, out=out.a)
''')


def run_peers(cases, torch_module, **env):
    """peers.py with `torch` the module of the given source, its lines as (word, object) pairs."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "torch.py"), "w") as f:
            f.write(torch_module)
        env = dict(os.environ, PYTHONPATH=tmp, **env)
        result = subprocess.run([sys.executable, PEERS], input=json.dumps(dict(TIMING, cases=cases)),
                                capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    lines = [line.split(" ", 1) for line in result.stdout.splitlines()]
    return [(word, json.loads(text)) for word, text in lines]


class Peers(unittest.TestCase):
    def test_without_torch_reports_it_and_measures_numpy(self):
        lines = run_peers([SCAN, QMM], "raise ImportError('No module named torch')\n")
        peers = {o["name"]: o for word, o in lines if word == "peer"}
        self.assertEqual(peers["torch"], {"name": "torch", "available": False, "version": None,
                                          "reason": "ImportError: No module named torch"})
        self.assertTrue(peers["numpy"]["available"])
        records = [o for word, o in lines if word == "record"]
        self.assertEqual([(r["peer"], r["case"]) for r in records], [("numpy", SCAN["case"])])
        self.assertFalse([o for word, o in lines if word == "skip"])

    def test_int_mm_on_the_cpu_per_thread_count(self):
        """One record per thread count, at the oneDNN cap of the environment, and PyTorch's own
        thread count restored after them (the scan that follows runs at it)."""
        lines = run_peers([dict(QMM, threads=[1, 2]), SCAN], STAND_IN, ONEDNN_MAX_CPU_ISA="AVX2")
        torch = next(o for word, o in lines if word == "peer" and o["name"] == "torch")
        self.assertEqual((torch["available"], torch["reason"]), (True, "no CUDA device: CPU only"))
        records = [o for word, o in lines if word == "record" and o["peer"] == "torch"]
        self.assertEqual([(r["case"], r["threads"]) for r in records],
                         [(QMM["case"], 1), (QMM["case"], 2), (SCAN["case"], 4)])  # then PyTorch's own again
        for r in records[:2]:
            self.assertEqual((r["kind"], r["device"], r["dtype"], r["isa"]), ("peer", "host", "uint8,int8,uint8", "avx2"))
            self.assertEqual(r["schedule"], "torch._int_mm + requantization (cpu, s8 x s8 -> s32 -> uint8)")
            self.assertGreaterEqual(r["repetitions"], 3)
            self.assertAlmostEqual(r["gops"], 2 * 20 * 24 * 40 / r["median_ns"])

    def test_default_threads_are_torchs_own(self):
        lines = run_peers([QMM], STAND_IN)
        self.assertEqual([o["threads"] for word, o in lines if word == "record"], [4])

    def test_int_mm_reads_b_in_the_cases_layout(self):
        """B with contiguous columns (b_layout "columns") reaches torch._int_mm as the transpose of
        a row-major {N,K} tensor, with the same shape: the stand-in refuses any other layout."""
        for layout in ("rows", "columns"):
            with self.subTest(layout=layout):
                lines = run_peers([dict(QMM, b_layout=layout)], STAND_IN, EXPECT_B_LAYOUT=layout)
                self.assertFalse([o for word, o in lines if word == "skip"])
                records = [o for word, o in lines if word == "record" and o["peer"] == "torch"]
                self.assertEqual([r["shape"] for r in records], [QMM["shape"]])

    def test_what_int_mm_cannot_run_is_skipped_with_the_reason(self):
        unquantized = {k: v for k, v in QMM.items() if k not in ("a_scale", "a_zero_point")}
        wide_b = dict(QMM, case="wide B", dtype="uint8,uint8,uint8", b_range=[0, 255])
        lines = run_peers([unquantized, wide_b], STAND_IN)
        skips = [o for word, o in lines if word == "skip"]
        self.assertEqual([s["schedule"] for s in skips], ["torch._int_mm"] * 2)
        self.assertEqual(skips[0]["reason"], "ValueError: no hetkern measurement of this case to take the quantization from")
        self.assertEqual(skips[1]["reason"], "ValueError: torch._int_mm takes int8 B: B's range [0, 255] does not fit int8")
        self.assertFalse([o for word, o in lines if word == "record" and o["peer"] == "torch"])


if __name__ == "__main__":
    PEERS = sys.argv.pop(1)
    unittest.main()
