#!/usr/bin/python3
"""The GPU plugin (libhetkern_gpu) is opened only when a device is needed, and hetkern without it
still runs every CPU schedule while the offload ones fail with the loader's reason. Each case runs
`hetkern` in its own process (a process opens the plugin at most once); LD_DEBUG=files shows which
libraries the loader opened. usage: test_gpu_plugin.py PATH/TO/hetkern
"""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HETKERN = None


def run(*args, env=None):
    full_env = {k: v for k, v in os.environ.items() if k != "HETKERN_GPU_PLUGIN"}
    full_env.update(env or {})
    return subprocess.run([HETKERN, *map(str, args)], capture_output=True, text=True, timeout=300, env=full_env)


def offload_line(stdout):
    return next(line for line in stdout.splitlines() if line.startswith("offload:"))


def opened_offload_runtime(stderr):
    return "libomptarget" in stderr


class Info(unittest.TestCase):
    def test_info_does_not_open_the_plugin(self):
        r = run("info", env={"LD_DEBUG": "files"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("available, not loaded", offload_line(r.stdout))
        self.assertFalse(opened_offload_runtime(r.stderr))
        self.assertNotIn("libhetkern_gpu", r.stderr)

    def test_devices_opens_it(self):
        r = run("info", "--devices", env={"LD_DEBUG": "files"})
        self.assertEqual(r.returncode, 0, r.stderr)
        line = offload_line(r.stdout)
        self.assertIn("loaded (", line)
        self.assertIn("libhetkern_gpu.so", line)
        self.assertTrue(opened_offload_runtime(r.stderr))

    def test_missing_plugin_is_reported(self):
        missing = os.path.join(tempfile.gettempdir(), "no-such-dir", "libhetkern_gpu.so")
        r = run("info", env={"HETKERN_GPU_PLUGIN": missing})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("unavailable (" + missing + ": No such file or directory)", offload_line(r.stdout))
        # The offload strategies say why they cannot run, as a call with one of them does.
        self.assertIn("not available here: the GPU plugin cannot be opened: " + missing, r.stdout)
        self.assertNotIn("host fallback\n", r.stdout)
        r = run("info", "--devices", env={"HETKERN_GPU_PLUGIN": missing})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cannot open shared object file", offload_line(r.stdout))

    def test_a_library_that_is_not_the_plugin_is_refused(self):
        lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(HETKERN))), "lib", "libhetkern.so")
        r = run("info", "--devices", env={"HETKERN_GPU_PLUGIN": lib})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("not a hetkern GPU plugin", offload_line(r.stdout))


class Schedules(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.x = np.random.default_rng(7).integers(-50, 50, size=(5, 37)).astype(np.int32)
        self.input = os.path.join(self.tmp.name, "x.npy")
        np.save(self.input, self.x)
        self.output = os.path.join(self.tmp.name, "y.npy")

    def tearDown(self):
        self.tmp.cleanup()

    def test_offload_schedule_runs_on_the_host_fallback(self):
        r = run("run", "cumsum", self.input, self.output, "--axis", "1", "--schedule", "scan.offload_rows",
                env={"LD_DEBUG": "files"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(opened_offload_runtime(r.stderr))
        np.testing.assert_array_equal(np.load(self.output), np.cumsum(self.x, axis=1, dtype=np.int32))

    def test_cpu_schedule_does_not_open_the_plugin(self):
        r = run("run", "cumsum", self.input, self.output, "--axis", "1", "--schedule", "scan.tiled",
                env={"LD_DEBUG": "files"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(opened_offload_runtime(r.stderr))
        np.testing.assert_array_equal(np.load(self.output), np.cumsum(self.x, axis=1, dtype=np.int32))

    @unittest.skipIf(os.path.exists("/dev/nvidiactl"), "a machine with the NVIDIA driver opens the plugin to look for a GPU")
    def test_unscheduled_call_without_gpu_driver_does_not_open_the_plugin(self):
        r = run("run", "cumsum", self.input, self.output, "--axis", "1", env={"LD_DEBUG": "files"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(opened_offload_runtime(r.stderr))
        np.testing.assert_array_equal(np.load(self.output), np.cumsum(self.x, axis=1, dtype=np.int32))

    def test_without_the_plugin_cpu_schedules_run_and_offload_ones_say_why(self):
        env = {"HETKERN_GPU_PLUGIN": os.path.join(self.tmp.name, "libhetkern_gpu.so")}
        r = run("run", "cumsum", self.input, self.output, "--axis", "1", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        np.testing.assert_array_equal(np.load(self.output), np.cumsum(self.x, axis=1, dtype=np.int32))
        os.remove(self.output)
        for schedule in ("scan.offload_rows", "scan.offload_chained(teams=4)"):
            r = run("run", "cumsum", self.input, self.output, "--axis", "1", "--schedule", schedule, env=env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
            self.assertIn("libhetkern_gpu", r.stderr)
            self.assertIn("cannot open shared object file", r.stderr)
            self.assertFalse(os.path.exists(self.output))


if __name__ == "__main__":
    HETKERN = sys.argv.pop(1)
    unittest.main()
