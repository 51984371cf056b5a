#!/usr/bin/python3
"""The hetkern command line against independent oracles.

Cumulative operators are checked against numpy with float64 accumulation (integers with numpy's
wrapping arithmetic), QuantizedLinearMatMul against exact integer arithmetic with the canonical
requantization. Every class of bad input must exit with status 2, print one line on stderr and
leave OUT as it was. usage: test_cli.py PATH/TO/hetkern
"""
import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import unittest
from fractions import Fraction

import numpy as np

HETKERN = None
RNG = np.random.default_rng(20261122)


def read_bytes(path):
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def run(*args):
    return subprocess.run([HETKERN, *map(str, args)], capture_output=True, text=True, timeout=120)


class Workdir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def save(self, name, array):
        np.save(self.path(name), array)
        return self.path(name)

    def assert_ok(self, result):
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")


def scan_oracle(x, axis, reverse, exclusive, product):
    """numpy: float64 accumulation for floats, wrapping in the element type for integers."""
    if reverse:
        x = np.flip(x, axis)
    if x.dtype.kind == "f":
        acc = (np.cumprod if product else np.cumsum)(x.astype(np.float64), axis=axis)
    else:
        with np.errstate(over="ignore"):
            acc = (np.cumprod if product else np.cumsum)(x, axis=axis, dtype=x.dtype)
    if exclusive:
        identity = np.ones_like(np.take(acc, [0], axis=axis)) if product else np.zeros_like(np.take(acc, [0], axis=axis))
        acc = np.concatenate([identity, np.delete(acc, -1, axis=axis)], axis=axis)
    if reverse:
        acc = np.flip(acc, axis)
    return acc, x


class CumulativeCli(Workdir):
    def test_documentation_examples(self):
        x = np.array([[[[2, 1, 3, 5], [3, 8, 7, 3], [9, 6, 2, 4]]]], dtype=np.float32)
        cases = [  # the DirectML pages and the specification's table
            ("cumsum", 3, [], [[2, 3, 6, 11], [3, 11, 18, 21], [9, 15, 17, 21]]),
            ("cumsum", 3, ["--exclusive"], [[0, 2, 3, 6], [0, 3, 11, 18], [0, 9, 15, 17]]),
            ("cumsum", 3, ["--reverse"], [[11, 9, 8, 5], [21, 18, 10, 3], [21, 12, 6, 4]]),
            ("cumsum", 2, [], [[2, 1, 3, 5], [5, 9, 10, 8], [14, 15, 12, 12]]),
            ("cumsum", 3, ["--reverse", "--exclusive"], [[9, 8, 5, 0], [18, 10, 3, 0], [12, 6, 4, 0]]),
            ("cumprod", 3, [], [[2, 2, 6, 30], [3, 24, 168, 504], [9, 54, 108, 432]]),
            ("cumprod", 3, ["--exclusive"], [[1, 2, 2, 6], [1, 3, 24, 168], [1, 9, 54, 108]]),
            ("cumprod", 3, ["--reverse"], [[30, 15, 15, 5], [504, 168, 21, 3], [432, 48, 8, 4]]),
            ("cumprod", 2, [], [[2, 1, 3, 5], [6, 8, 21, 15], [54, 48, 42, 60]]),
            ("cumprod", 3, ["--reverse", "--exclusive"], [[15, 15, 5, 1], [168, 21, 3, 1], [48, 8, 4, 1]]),
        ]
        src = self.save("x.npy", x)
        for op, axis, flags, expected in cases:
            with self.subTest(op=op, axis=axis, flags=flags):
                out = self.path("y.npy")
                self.assert_ok(run("run", op, src, out, "--axis", axis, *flags))
                y = np.load(out)
                self.assertEqual(y.dtype, np.float32)
                self.assertEqual(y.shape, (1, 1, 3, 4))
                np.testing.assert_array_equal(y[0, 0], np.array(expected, dtype=np.float32))

    def check_random(self, dtype, product, trials):
        for trial in range(trials):
            rank = int(RNG.integers(1, 9))
            shape = []
            for _ in range(rank):
                shape.append(int(RNG.choice([1, 2, 3, 5, 7, 11, 16])))
                while np.prod(shape) > 3000 and shape[-1] > 1:
                    shape[-1] //= 2
            axis = int(RNG.integers(0, rank))
            if dtype == np.float16 and product:
                shape[axis] = min(shape[axis], 12)
            if RNG.integers(0, 2):
                axis -= rank  # numpy's negative axes count from the last
            if np.dtype(dtype).kind == "f":
                low = 0.8 if product else 0.0
                mag = RNG.uniform(low, 1.25 if product else 1.0, size=shape)
                x = (mag * RNG.choice([-1, 1], size=shape)).astype(dtype)
                if dtype == np.float16 and product:
                    x = RNG.choice(np.array([-1.5, -1, -0.5, 0.5, 1, 1.25, 1.5], dtype=dtype), size=shape)
            else:
                info = np.iinfo(dtype)
                x = RNG.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
            if RNG.integers(0, 2):
                x = np.asfortranarray(x)
            reverse, exclusive = bool(RNG.integers(0, 2)), bool(RNG.integers(0, 2))
            flags = (["--reverse"] if reverse else []) + (["--exclusive"] if exclusive else [])
            schedule = RNG.choice(["", "reference", "scan.tiled(tile=3)", "scan.parallel(threads=2)",
                                   "scan.blocked(block=16, threads=2)"])
            if schedule:
                flags += ["--schedule", schedule]
            src, out = self.save("x.npy", x), self.path("y.npy")
            op = "cumprod" if product else "cumsum"
            with self.subTest(dtype=np.dtype(dtype).name, op=op, shape=shape, axis=axis, flags=flags):
                self.assert_ok(run("run", op, src, out, "--axis", axis, *flags))
                y = np.load(out)
                self.assertEqual(y.dtype, np.dtype(dtype))
                self.assertEqual(y.shape, x.shape)
                exact, traversed = scan_oracle(x, axis, reverse, exclusive, product)
                if np.dtype(dtype).kind != "f":
                    np.testing.assert_array_equal(y, exact)
                elif dtype == np.float64:
                    self.check_float64(x, y, axis, reverse, exclusive, product)
                elif dtype == np.float32:
                    magnitude = np.cumsum(np.abs(traversed.astype(np.float64)), axis=axis)
                    if reverse:
                        magnitude = np.flip(magnitude, axis)
                    bound = 2.0**-24 * np.abs(exact) + (0 if product else 2.0**-45 * magnitude)
                    if product:
                        bound = 2.0**-23 * np.abs(exact)
                    self.assertTrue(np.all(np.abs(y.astype(np.float64) - exact) <= bound))
                else:
                    ulp = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
                    self.assertTrue(np.all(np.abs(y.astype(np.float64) - exact) <= ulp))

    def check_float64(self, x, y, axis, reverse, exclusive, product):
        """Within one float64 rounding of the exact prefix (exact rational arithmetic), plus the
        double-double accumulator's own error: length * 2^-104 of the magnitudes folded in (of the
        prefix itself for products)."""
        exact_x = np.vectorize(Fraction, otypes=[object])(x)
        exact, _ = scan_oracle(exact_x, axis, reverse, exclusive, product)
        magnitude, _ = scan_oracle(abs(exact_x), axis, reverse, exclusive, False)
        length = x.shape[axis]
        for got, want, mag in zip(y.flat, exact.flat, magnitude.flat):
            bound = Fraction(1, 2**53) * abs(want) + Fraction(length + 2, 2**104) * (abs(want) if product else mag)
            self.assertLessEqual(abs(Fraction(float(got)) - want), bound, f"got {got!r}, exact {float(want)!r}")

    def test_more_openmp_threads_than_a_schedule_takes(self):
        # The default schedules took OpenMP's maximum as their thread count and refused it past 1024.
        env = dict(os.environ, OMP_NUM_THREADS="1025")
        for shape in ((8192, 64), (512, 512)):
            with self.subTest(shape=shape):
                x = RNG.integers(-1000, 1000, size=shape).astype(np.int32)
                src, out = self.save("x.npy", x), self.path("y.npy")
                result = subprocess.run([HETKERN, "run", "cumsum", src, out, "--axis", "1"], capture_output=True, text=True,
                                        timeout=120, env=env)
                self.assert_ok(result)
                np.testing.assert_array_equal(np.load(out), np.cumsum(x, axis=1, dtype=np.int32))

    def test_omp_num_threads_that_the_openmp_runtime_aborts_on(self):
        # libomp 19 fails an assertion (status 134) on these; hetkern removes them with a warning.
        x = RNG.integers(-1000, 1000, size=(64, 48)).astype(np.int32)
        src, out = self.save("x.npy", x), self.path("y.npy")
        for value in ("abc", "-1", "2.5", "4,x", "2147483647", ""):
            with self.subTest(value=value):
                result = subprocess.run([HETKERN, "run", "cumsum", src, out, "--axis", "1"], capture_output=True,
                                        text=True, timeout=120, env=dict(os.environ, OMP_NUM_THREADS=value))
                self.assertEqual(result.returncode, 0, result.stderr)
                np.testing.assert_array_equal(np.load(out), np.cumsum(x, axis=1, dtype=np.int32))
                self.assertNotIn("Assertion", result.stderr)
                self.assertEqual(f'hetkern: warning: OMP_NUM_THREADS="{value}" ignored' in result.stderr, bool(value))
                if not value:  # removed quietly; and no other OpenMP runtime (oneDNN's libgomp) read it first
                    self.assertEqual(result.stderr, "")

    def test_random_float64(self):
        self.check_random(np.float64, False, 10)
        self.check_random(np.float64, True, 8)

    def test_float64_sums_are_rounded_once(self):
        """A million tenths: numpy's float64 fold drifts to 100000.00000133288; the exact sum of
        the stored tenths, rounded once, is 100000.0."""
        src, out = self.save("tenths.npy", np.full(10**6, 0.1)), self.path("y.npy")
        self.assert_ok(run("run", "cumsum", src, out, "--axis", "-1"))
        y = np.load(out)
        self.assertEqual(y.dtype, np.float64)
        for k in (10, 1000, 10**6):
            self.assertEqual(y[k - 1], float(Fraction(0.1) * k), k)
        self.assertNotEqual(np.cumsum(np.full(10**6, 0.1))[-1], y[-1])

    def test_negative_axes_count_from_the_last(self):
        x = RNG.uniform(-1, 1, size=(3, 4, 5)).astype(np.float32)
        src = self.save("x.npy", x)
        for axis in (-3, -2, -1):
            with self.subTest(axis=axis):
                negative, positive = self.path("n.npy"), self.path("p.npy")
                self.assert_ok(run("run", "cumprod", src, negative, "--axis", axis, "--reverse"))
                self.assert_ok(run("run", "cumprod", src, positive, f"--axis={axis + 3}", "--reverse"))
                np.testing.assert_array_equal(np.load(negative), np.load(positive))

    def test_random_float32(self):
        self.check_random(np.float32, False, 12)
        self.check_random(np.float32, True, 8)

    def test_random_float16(self):
        self.check_random(np.float16, False, 8)
        self.check_random(np.float16, True, 8)

    def test_random_integers(self):
        for dtype in (np.int32, np.uint32, np.int64, np.uint64):
            self.check_random(dtype, False, 4)
            self.check_random(dtype, True, 4)


def qmm_oracle(a, za, sa, b, zb, sb, zy, sy, out_dtype):
    """Exact integer accumulation and RNE(acc * float32(float32(sa*sb)/sy)) + zy, saturated."""
    acc = np.matmul(a.astype(np.int64) - za.astype(np.int64), b.astype(np.int64) - zb.astype(np.int64))
    mult = (np.float32(sa) * np.float32(sb)).astype(np.float32) / np.float32(sy)
    mult = np.broadcast_to(mult.astype(np.float32), acc.shape)
    zy = np.broadcast_to(zy.astype(np.int64), acc.shape)
    info = np.iinfo(out_dtype)
    out = np.empty(acc.shape, dtype=np.int64)
    for index in np.ndindex(acc.shape):
        value = round(Fraction(int(acc[index])) * Fraction(float(mult[index])))  # half to even
        out[index] = min(max(value + int(zy[index]), info.min), info.max)
    return out.astype(out_dtype)


class QuantizedMatMulCli(Workdir):
    def qmm(self, out, tensors, extra=()):
        args = ["run", "qlinear-matmul", out]
        for flag, name in [("--a", "a"), ("--a-scale", "sa"), ("--a-zero-point", "za"), ("--b", "b"),
                           ("--b-scale", "sb"), ("--b-zero-point", "zb"), ("--out-scale", "sy"),
                           ("--out-zero-point", "zy")]:
            if name in tensors:
                args += [flag, self.save(name + ".npy", tensors[name])]
        return run(*args, *extra)

    def test_scales_that_float32_cannot_hold_name_the_text(self):
        a, b = self.save("a.npy", np.ones((2, 3), np.uint8)), self.save("b.npy", np.ones((3, 2), np.int8))
        for scale, words in (("1e-50", "1e-50 rounds to 0 as a float32"), ("1e39", "1e39 overflows float32"),
                             ("1e400", "1e400 overflows float32"), ("+1e39", "+1e39 overflows float32"),
                             ("1e-400", "1e-400 rounds to 0 as a float32")):
            with self.subTest(scale=scale):
                r = run("run", "qlinear-matmul", self.path("y.npy"), "--a", a, "--b", b, "--a-scale", scale,
                        "--b-scale", "1", "--out-scale", "1")
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(words, r.stderr)
                self.assertFalse(os.path.exists(self.path("y.npy")))

    def test_specification_example(self):
        t = dict(a=np.array([[208, 236, 0, 238], [3, 214, 255, 29]], dtype=np.uint8),
                 sa=np.float32(0.0066), za=np.uint8(113),
                 b=np.array([[152, 51, 244], [60, 26, 255], [0, 127, 246], [127, 254, 247]], dtype=np.uint8),
                 sb=np.float32(0.00705), zb=np.uint8(114), sy=np.float32(0.0107), zy=np.uint8(118))
        out = self.path("y.npy")
        self.assert_ok(self.qmm(out, t))
        np.testing.assert_array_equal(np.load(out), np.array([[168, 115, 255], [1, 66, 151]], dtype=np.uint8))

    def test_random_against_exact_arithmetic(self):
        for trial in range(16):
            rank = int(RNG.integers(2, 5))
            batch = [int(RNG.integers(1, 3)) for _ in range(rank - 2)]
            m, n, k = (int(RNG.integers(1, 13)) for _ in range(3))
            types = [RNG.choice([np.int8, np.uint8]) for _ in range(3)]
            a = RNG.integers(np.iinfo(types[0]).min, np.iinfo(types[0]).max, size=batch + [m, k], endpoint=True).astype(types[0])
            b = RNG.integers(np.iinfo(types[1]).min, np.iinfo(types[1]).max, size=batch + [k, n], endpoint=True).astype(types[1])
            if RNG.integers(0, 2):
                a = np.asfortranarray(a)

            def param(dtype, per_row, count, scale):
                shape = [count, 1] if per_row else [1, count]
                if RNG.integers(0, 2):
                    shape = [1] * int(RNG.integers(0, 3)) + shape
                if scale:
                    dyadic = RNG.integers(0, 2)
                    values = 2.0 ** RNG.integers(-8, 2, size=shape) if dyadic else RNG.uniform(0.001, 0.05, size=shape)
                    return values.astype(np.float32)
                info = np.iinfo(dtype)
                return RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)

            per = [bool(RNG.integers(0, 2)) for _ in range(6)]
            t = dict(a=a, b=b,
                     sa=param(None, True, m if per[0] else 1, True),
                     za=param(types[0], True, m if per[1] else 1, False),
                     sb=param(None, False, n if per[2] else 1, True),
                     zb=param(types[1], False, n if per[3] else 1, False),
                     sy=param(None, True, m if per[4] else 1, True),
                     zy=param(types[2], True, m if per[5] else 1, False))
            t["sy"] = (t["sy"] * np.float32(64)).astype(np.float32)
            expected = qmm_oracle(t["a"], t["za"].reshape(t["za"].shape[-2:]), t["sa"].reshape(t["sa"].shape[-2:]),
                                  t["b"], t["zb"].reshape(t["zb"].shape[-2:]), t["sb"].reshape(t["sb"].shape[-2:]),
                                  t["zy"].reshape(t["zy"].shape[-2:]), t["sy"].reshape(t["sy"].shape[-2:]), types[2])
            schedule = RNG.choice(["", "reference", "qmm.tiled(mc=3, nc=5, kc=2)", "qmm.parallel(threads=2)"])
            out = self.path("y.npy")
            with self.subTest(trial=trial, shape=(batch, m, n, k), types=types, schedule=schedule):
                self.assert_ok(self.qmm(out, t, ["--schedule", schedule] if schedule else []))
                y = np.load(out)
                self.assertEqual(y.dtype, np.dtype(types[2]))
                np.testing.assert_array_equal(y, expected)


def random_q(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


class QuantizedMatMulConventions(Workdir):
    """What users of ONNX and numpy expect: numbers as parameters, numpy.matmul's broadcast, a uint8
    output by default and float16 scales, each against exact integer arithmetic."""

    def run_qmm(self, a, b, params, extra=()):
        """params: flag -> a number (given as text) or an array (saved as .npy)."""
        args = ["run", "qlinear-matmul", self.path("y.npy"), "--a", self.save("a.npy", a), "--b", self.save("b.npy", b)]
        for flag, value in params.items():
            args += [flag, value if isinstance(value, str) else self.save(flag.strip("-") + ".npy", value)]
        result = run(*args, *extra)
        self.assert_ok(result)
        return np.load(self.path("y.npy"))

    def test_numbers_as_scales_and_zero_points(self):
        a = np.array([[208, 236, 0, 238], [3, 214, 255, 29]], dtype=np.uint8)
        b = np.array([[152, 51, 244], [60, 26, 255], [0, 127, 246], [127, 254, 247]], dtype=np.uint8)
        y = self.run_qmm(a, b, {"--a-scale": "0.0066", "--a-zero-point": "113", "--b-scale": "0.00705",
                                "--b-zero-point": "114", "--out-scale": "0.0107", "--out-zero-point": "118"})
        np.testing.assert_array_equal(y, np.array([[168, 115, 255], [1, 66, 151]], dtype=np.uint8))
        # A leading '+', as strtod and numpy read it.
        y = self.run_qmm(a, b, {"--a-scale": "+0.0066", "--a-zero-point": "+113", "--b-scale": "0.00705",
                                "--b-zero-point": "114", "--out-scale": "+0.0107", "--out-zero-point": "118"})
        np.testing.assert_array_equal(y, np.array([[168, 115, 255], [1, 66, 151]], dtype=np.uint8))
        # Signed tensors take negative zero points; numbers and files mix.
        for trial in range(6):
            a, b = random_q(np.int8, (5, 9)), random_q(np.int8, (9, 4))
            za, zb, zy = (int(RNG.integers(-128, 128)) for _ in range(3))
            sa, sb = (float(RNG.uniform(0.001, 0.05)) for _ in range(2))
            sy = np.full((5, 1), 0.01, dtype=np.float32) * np.float32(2.0 ** int(RNG.integers(0, 5)))
            with self.subTest(trial=trial):
                y = self.run_qmm(a, b, {"--a-scale": repr(sa), "--a-zero-point": str(za), "--b-scale": repr(sb),
                                        "--b-zero-point": str(zb), "--out-scale": sy, "--out-zero-point": str(zy)},
                                 ["--out-type", "int8"])
                expected = qmm_oracle(a, np.int8(za), np.float32(sa), b, np.int8(zb), np.float32(sb), np.int8(zy), sy,
                                      np.int8)
                self.assertEqual(y.dtype, np.int8)
                np.testing.assert_array_equal(y, expected)

    def test_batch_dimensions_broadcast_as_numpy_matmul(self):
        cases = [((2, 4, 8), (8, 3)), ((4, 8), (2, 8, 3)), ((3, 1, 4, 8), (2, 8, 3)), ((1, 2, 4, 8), (3, 1, 8, 3)),
                 ((2, 1, 4, 8), (1, 3, 8, 3)), ((1, 4, 8), (1, 8, 3))]
        for a_shape, b_shape in cases:
            a, b = random_q(np.uint8, a_shape), random_q(np.int8, b_shape)
            sa = RNG.uniform(0.001, 0.01, size=(4, 1)).astype(np.float32)
            za = random_q(np.uint8, (4, 1))
            sb = np.float32(0.02)
            schedule = RNG.choice(["", "reference", "qmm.tiled(mc=3, nc=5, kc=2)", "qmm.parallel(threads=2)"])
            with self.subTest(a=a_shape, b=b_shape, schedule=schedule):
                y = self.run_qmm(a, b, {"--a-scale": sa, "--a-zero-point": za, "--b-scale": "0.02",
                                        "--out-scale": "0.05", "--out-zero-point": "128"},
                                 ["--schedule", schedule] if schedule else [])
                expected = qmm_oracle(a, za, sa, b, np.int8(0), sb, np.uint8(128), np.float32(0.05), np.uint8)
                self.assertEqual(y.shape, np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape)
                np.testing.assert_array_equal(y, expected)

    def test_output_is_uint8_without_an_output_zero_point(self):
        a, b = random_q(np.int8, (3, 7)), random_q(np.int8, (7, 5))
        y = self.run_qmm(a, b, {"--a-scale": "0.05", "--b-scale": "0.05", "--out-scale": "0.25"})
        self.assertEqual(y.dtype, np.uint8)
        expected = qmm_oracle(a, np.int8(0), np.float32(0.05), b, np.int8(0), np.float32(0.05), np.uint8(0),
                              np.float32(0.25), np.uint8)
        np.testing.assert_array_equal(y, expected)
        # A number given as the output zero point is of that default type too.
        y = self.run_qmm(a, b, {"--a-scale": "0.05", "--b-scale": "0.05", "--out-scale": "0.25", "--out-zero-point": "200"})
        self.assertEqual(y.dtype, np.uint8)
        expected = qmm_oracle(a, np.int8(0), np.float32(0.05), b, np.int8(0), np.float32(0.05), np.uint8(200),
                              np.float32(0.25), np.uint8)
        np.testing.assert_array_equal(y, expected)

    def test_float16_scales_widen_exactly(self):
        a, b = random_q(np.uint8, (2, 6, 10)), random_q(np.uint8, (10, 4))
        sa = RNG.uniform(0.001, 0.01, size=(6, 1)).astype(np.float16)
        sb = RNG.uniform(0.001, 0.01, size=(1, 4)).astype(np.float16)
        sy = np.float16(0.03)
        y = self.run_qmm(a, b, {"--a-scale": sa, "--a-zero-point": "100", "--b-scale": sb, "--b-zero-point": "90",
                                "--out-scale": sy, "--out-zero-point": "127"})
        expected = qmm_oracle(a, np.uint8(100), sa.astype(np.float32), b, np.uint8(90), sb.astype(np.float32),
                              np.uint8(127), np.float32(sy), np.uint8)
        np.testing.assert_array_equal(y, expected)


class OffloadSchedules(Workdir):
    """The offload schedules wherever they run: on a host with no GPU they run on the host fallback,
    asked for more teams than it has cores (libomp once warned on stderr for each such launch, and
    a line cut in parts took a product of zero from the teams not formed)."""

    def setUp(self):
        super().setUp()
        if "scan.split" not in run("info").stdout:
            self.skipTest("built without offload")

    def test_scans_are_exact_and_quiet(self):
        # Odd factors: no prefix product wraps to zero. 100003 elements: the first part's fold is
        # cut among 6 teams.
        line = RNG.integers(-(2**62), 2**62, size=(1, 100003), dtype=np.int64) | 1
        lines = RNG.integers(-1000, 1000, size=(1030, 37)).astype(np.int32)
        cases = [("cumprod", line, 1, "scan.split(gpu_share=500)"), ("cumsum", line, 1, "scan.split(gpu_share=500)"),
                 ("cumprod", line, 1, "scan.offload_chained"), ("cumsum", lines, 1, "scan.offload_rows"),
                 ("cumprod", lines | 1, 1, "scan.offload_warp_rows"),
                 ("cumsum", lines, 0, "scan.offload_columns"), ("cumsum", lines, 1, "scan.split(gpu_share=1000)")]
        for op, x, axis, schedule in cases:
            with self.subTest(op=op, shape=x.shape, schedule=schedule):
                out = self.path("y.npy")
                self.assert_ok(run("run", op, self.save("x.npy", x), out, "--axis", axis, "--schedule", schedule))
                np.testing.assert_array_equal(np.load(out), scan_oracle(x, axis, False, False, op == "cumprod")[0])

    def test_matmuls_are_exact_and_quiet(self):
        # 300 rows: three tiles of 128, so more teams than a 2-core host has.
        a, b = random_q(np.uint8, (300, 20)), random_q(np.int8, (20, 19))
        expected = qmm_oracle(a, np.zeros((1, 1), np.uint8), np.full((1, 1), 0.5, np.float32), b, np.zeros((1, 1), np.int8),
                              np.full((1, 1), 0.25, np.float32), np.full((1, 1), 7, np.uint8),
                              np.full((1, 1), 16, np.float32), np.uint8)
        for schedule in ("qmm.offload", "qmm.offload_mma", "qmm.split(gpu_share=500)"):
            with self.subTest(schedule=schedule):
                out = self.path("y.npy")
                self.assert_ok(run("run", "qlinear-matmul", out, "--a", self.save("a.npy", a), "--b", self.save("b.npy", b),
                                   "--a-scale", "0.5", "--b-scale", "0.25", "--out-scale", "16", "--out-zero-point", "7",
                                   "--schedule", schedule))
                np.testing.assert_array_equal(np.load(out), expected)


class OutputPaths(Workdir):
    """Links are followed and kept, - is standard output, FIFOs and devices are written in place."""

    def setUp(self):
        super().setUp()
        self.x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
        self.src = self.save("x.npy", self.x)
        self.expected = np.cumsum(self.x, axis=1)

    def cumsum_to(self, out):
        return subprocess.run([HETKERN, "run", "cumsum", self.src, out, "--axis", "1"], capture_output=True, timeout=60)

    def test_symbolic_link_writes_its_target_and_stays(self):
        for existing in (True, False):
            with self.subTest(existing_target=existing):
                target, link = self.path(f"target-{existing}.npy"), self.path(f"link-{existing}.npy")
                if existing:
                    with open(target, "wb") as f:
                        f.write(b"old contents")
                os.symlink(os.path.basename(target), link)
                result = self.cumsum_to(link)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertTrue(os.path.islink(link))
                self.assertEqual(os.readlink(link), os.path.basename(target))
                np.testing.assert_array_equal(np.load(target), self.expected)
                self.assertEqual(sorted(f for f in os.listdir(self.dir) if ".tmp." in f), [])

    def test_a_read_only_file_is_not_replaced(self):
        # As a user other than root, for whom every file is writable: the directory is writable,
        # so only the file's own mode keeps it.
        os.chmod(self.dir, 0o777)
        out = self.path("read-only.npy")
        with open(out, "wb") as f:
            f.write(b"old contents")
        os.chmod(out, 0o444)
        command, as_user = HETKERN, {}
        if os.geteuid() == 0:
            # nobody may not reach the build tree (a fresh clone under a 0700 temporary directory):
            # the command line and its library are copied where it can.
            tools = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, tools)
            os.chmod(tools, 0o755)
            command = shutil.copy(HETKERN, tools)
            library = os.path.join(os.path.dirname(HETKERN), "..", "lib", "libhetkern.so.0")
            shutil.copy(library, tools)
            as_user = {"user": "nobody", "env": dict(os.environ, LD_LIBRARY_PATH=tools)}
        result = subprocess.run([command, "run", "cumsum", self.src, out, "--axis", "1"], capture_output=True,
                                text=True, timeout=60, **as_user)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("read-only.npy", result.stderr)
        self.assertIn("Permission denied", result.stderr)
        self.assertEqual(read_bytes(out), b"old contents")
        self.assertEqual(sorted(f for f in os.listdir(self.dir) if ".tmp." in f), [])

    def test_a_replaced_file_keeps_its_mode(self):
        for mode in (0o600, 0o640, 0o755):
            with self.subTest(mode=oct(mode)):
                out = self.path(f"kept-{mode:o}.npy")
                with open(out, "wb") as f:
                    f.write(b"old contents")
                os.chmod(out, mode)
                result = self.cumsum_to(out)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(os.stat(out).st_mode & 0o7777, mode)
                np.testing.assert_array_equal(np.load(out), self.expected)

    def test_an_unknown_log_channel_warns_and_the_call_runs(self):
        out = self.path("logged.npy")
        env = dict(os.environ, HETKERN_LOG="dispatch,bogus")
        result = subprocess.run([HETKERN, "run", "cumsum", self.src, out, "--axis", "1"], capture_output=True,
                                text=True, timeout=60, env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("HETKERN_LOG item 'bogus' ignored", result.stderr)
        self.assertEqual(result.stderr.count("'bogus'"), 1, result.stderr)
        self.assertIn("cumulative_sum", result.stderr)  # the dispatch line it did ask for
        np.testing.assert_array_equal(np.load(out), self.expected)

    def test_dash_is_standard_output(self):
        result = self.cumsum_to("-")
        self.assertEqual(result.returncode, 0, result.stderr)
        np.testing.assert_array_equal(np.load(io.BytesIO(result.stdout)), self.expected)
        self.assertFalse(os.path.exists(self.path("-")))
        self.assertFalse(os.path.exists("-"))

    def test_dev_stdout_is_written_not_replaced(self):
        result = self.cumsum_to("/dev/stdout")
        self.assertEqual(result.returncode, 0, result.stderr)
        np.testing.assert_array_equal(np.load(io.BytesIO(result.stdout)), self.expected)
        self.assertTrue(os.path.islink("/dev/stdout"))

    def test_fifo_is_written_in_place(self):
        fifo = self.path("pipe")
        os.mkfifo(fifo)
        received = []
        reader = threading.Thread(target=lambda: received.append(open(fifo, "rb").read()))
        reader.start()
        result = self.cumsum_to(fifo)
        reader.join(timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced")
        np.testing.assert_array_equal(np.load(io.BytesIO(received[0])), self.expected)

    def test_bad_input_writes_nothing_to_any_kind_of_output(self):
        """Validation fails before an output is opened: nothing on stdout, and a FIFO without a
        reader is never opened (opening it would block until the timeout)."""
        bad = ["run", "cumsum", self.src, None, "--axis", "5"]
        fifo = self.path("pipe")
        os.mkfifo(fifo)
        for out in ("-", fifo):
            with self.subTest(out=out):
                args = [out if a is None else a for a in bad]
                result = subprocess.run([HETKERN, *args], capture_output=True, timeout=20)
                self.assertEqual(result.returncode, 2)
                self.assertEqual(result.stdout, b"")
                self.assertEqual(len(result.stderr.decode().splitlines()), 1, result.stderr)

    def test_a_directory_is_refused(self):
        result = self.cumsum_to(self.dir)
        self.assertEqual(result.returncode, 2)
        self.assertIn("directory", result.stderr.decode())


class BadInputs(Workdir):
    """Status 2, exactly one line on stderr, and OUT neither created nor modified."""

    def expect_usage_error(self, args, out, phrase):
        before = read_bytes(out)
        result = run(*args)
        self.assertEqual(result.returncode, 2, (args, result.stdout, result.stderr))
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(phrase, lines[0])
        after = read_bytes(out)
        self.assertEqual(before, after, "OUT was changed")
        leftovers = [f for f in os.listdir(self.dir) if ".tmp." in f]
        self.assertEqual(leftovers, [])

    def test_every_class_of_bad_input(self):
        good = self.save("good.npy", np.ones((2, 3), dtype=np.float32))
        out = self.path("out.npy")
        truncated = self.path("truncated.npy")
        with open(good, "rb") as f:
            data = f.read()
        with open(truncated, "wb") as f:
            f.write(data[:-5])
        garbage = self.path("garbage.npy")
        with open(garbage, "wb") as f:
            f.write(b"not a numpy file at all")
        big_endian = self.save("be.npy", np.ones(3, dtype=">f4"))
        objects = self.save("obj.npy", np.array([1, "a"], dtype=object))
        booleans = self.save("bool.npy", np.ones(3, dtype=bool))
        voids = self.save("v2.npy", np.zeros(3, dtype="V2"))  # how ml_dtypes saves bfloat16
        int8 = self.save("i8.npy", np.ones(3, dtype=np.int8))
        scalar = self.save("scalar.npy", np.float32(1))
        cases = [
            (["run", "cumsum", self.path("missing.npy"), out, "--axis", "0"], "missing.npy"),
            (["run", "cumsum", truncated, out, "--axis", "0"], "truncated"),
            (["run", "cumsum", garbage, out, "--axis", "0"], "garbage.npy"),
            (["run", "cumsum", big_endian, out, "--axis", "0"], "big-endian"),
            (["run", "cumsum", objects, out, "--axis", "0"], "obj.npy"),
            (["run", "cumsum", booleans, out, "--axis", "0"], "bool.npy"),
            (["run", "cumsum", voids, out, "--axis", "0"], "unsupported dtype descr '|V2'"),
            (["run", "cumsum", int8, out, "--axis", "0"], "int8"),
            (["run", "cumsum", scalar, out, "--axis", "0"], "rank 0"),
            (["run", "cumsum", good, out, "--axis", "2"], "axis"),
            (["run", "cumsum", good, out, "--axis", "-3"], "out of range"),
            (["run", "cumsum", good, out, "--axis", "x"], "axis"),
            (["run", "cumsum", good, out, "--axis", ""], "axis"),
            (["run", "cumprod", good, out, "--axis", "0", "--schedule", "scan.tiled(tile=0)"], "tile"),
            (["run", "cumprod", good, out, "--axis", "0", "--schedule", "scan.tiled("], "schedule"),
            (["run", "cumsum", good, out], "axis"),
            (["run", "cumsum", good], "output"),
            (["run", "transpose", good, out], "transpose"),
            (["frobnicate"], "frobnicate"),
            (["run", "cumsum", good, self.path("no/such/dir/out.npy"), "--axis", "0"], "out.npy"),
        ]
        for args, phrase in cases:
            with self.subTest(args=args):
                self.expect_usage_error(args, out, phrase)
                with open(out, "wb") as f:  # and with an existing OUT that must survive
                    f.write(b"previous contents")
                self.expect_usage_error(args, out, phrase)
                os.remove(out)

    def test_quantized_matmul_bad_inputs(self):
        a = self.save("a.npy", np.ones((2, 3), dtype=np.uint8))
        b = self.save("b.npy", np.ones((3, 4), dtype=np.int8))
        b_wrong_k = self.save("bk.npy", np.ones((5, 4), dtype=np.int8))
        s = self.save("s.npy", np.float32(0.5))
        s_zero = self.save("s0.npy", np.float32(0))
        s_f64 = self.save("s64.npy", np.float64(0.5))
        s_bad_shape = self.save("sbad.npy", np.ones((3, 1), dtype=np.float32))
        z_int8 = self.save("zi8.npy", np.int8(1))
        z_uint8 = self.save("zu8.npy", np.uint8(1))
        out = self.path("out.npy")
        base = ["run", "qlinear-matmul", out, "--a", a, "--a-scale", s, "--b", b, "--b-scale", s, "--out-scale", s]
        # An output of 2^40 bytes from 2 MB of files whose K differ: refused as a shape mismatch,
        # not as more memory than there is.
        a_tall = self.save("atall.npy", np.ones((1 << 20, 2), dtype=np.uint8))
        b_wide = self.save("bwide.npy", np.ones((1, 1 << 20), dtype=np.int8))
        a3 = self.save("a3.npy", np.ones((2, 2, 3), dtype=np.uint8))
        b3 = self.save("b3.npy", np.ones((3, 3, 4), dtype=np.int8))
        s_text = self.path("notes.txt")
        with open(s_text, "w") as f:
            f.write("0.5\n")

        def replaced(flag, value):
            args = list(base)
            args[args.index(flag) + 1] = value
            return args

        cases = [
            (base + ["--out-type", "int16"], "out-type"),
            (base + ["--out-type", "int8", "--out-zero-point", z_uint8], "differs"),
            (["run", "qlinear-matmul", out, "--a", a, "--a-scale", s, "--b", b_wrong_k, "--b-scale", s,
              "--out-scale", s, "--out-type", "uint8"], "K = 3"),
            (["run", "qlinear-matmul", out, "--a", a_tall, "--a-scale", s, "--b", b_wide, "--b-scale", s,
              "--out-scale", s], "K = 2"),
            (["run", "qlinear-matmul", out, "--a", a, "--a-scale", s_zero, "--b", b, "--b-scale", s,
              "--out-scale", s, "--out-type", "uint8"], "a_scale"),
            (["run", "qlinear-matmul", out, "--a", a, "--a-scale", s_f64, "--b", b, "--b-scale", s,
              "--out-scale", s, "--out-type", "uint8"], "float64"),
            (["run", "qlinear-matmul", out, "--a", a, "--a-scale", s, "--b", b, "--b-scale", s_bad_shape,
              "--out-scale", s, "--out-type", "uint8"], "b_scale"),
            (base + ["--a-zero-point", z_int8, "--out-type", "uint8"], "a_zero_point"),
            (base + ["--out-type", "uint8", "--schedule", "scan.tiled"], "unknown strategy"),
            (["run", "qlinear-matmul", out, "--a", a3, "--a-scale", s, "--b", b3, "--b-scale", s,
              "--out-scale", s], "do not broadcast"),
            (replaced("--a-scale", "0.5x"), "neither a number nor an existing .npy file"),
            (replaced("--a-scale", s_text), "notes.txt"),
            (replaced("--a-scale", "-0.5"), "a_scale"),
            (replaced("--out-scale", "nan"), "output_scale"),
            (base + ["--a-zero-point", "256"], "0 to 255"),
            (base + ["--a-zero-point", "1.5"], "--a-zero-point"),
            (base + ["--b-zero-point", "-129"], "-128 to 127"),
            (base + ["--out-zero-point", "-1"], "0 to 255 (uint8)"),
            (base + ["--out-type", "int8", "--out-zero-point", "128"], "-128 to 127"),
        ]
        for args, phrase in cases:
            with self.subTest(args=args):
                self.expect_usage_error(args, out, phrase)


if __name__ == "__main__":
    HETKERN = sys.argv.pop(1)
    unittest.main(verbosity=1)
