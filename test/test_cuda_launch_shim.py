"""The CUDA launch shim (runtime/platform/cuda_launch_shim.cpp) against a stand-in driver.

Usage: test_cuda_launch_shim.py SHIM FAKE_DRIVER_DIR. Each check runs in a fresh Python process
whose loader finds the stand-in libcuda.so.1 in FAKE_DRIVER_DIR: what the offload runtime gets when
it opens "libcuda.so" after the shim was loaded, and what a launch through it asks of the driver.
"""
import os
import subprocess
import sys
import textwrap
import unittest

SHIM, FAKE_DIR = sys.argv[1], sys.argv[2]
del sys.argv[1:3]

PRELUDE = textwrap.dedent(f"""
    import ctypes, os
    shim = ctypes.CDLL({SHIM!r}, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    # What the offload runtime does: dlopen("libcuda.so") and look its functions up there.
    cuda = ctypes.CDLL("libcuda.so", mode=os.RTLD_LAZY | os.RTLD_GLOBAL)
    fake = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    launch = cuda.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    def run(function, shared):
        return launch(function, 1, 1, 1, 128, 1, 1, shared, None, None, None)
""")


def run(body):
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DIR)
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], env=env,
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError(done.stdout + done.stderr)
    return done.stdout.split()


class LaunchShim(unittest.TestCase):
    def test_the_runtime_gets_the_shim_under_the_drivers_name(self):
        out = run("""
            print(cuda._handle == shim._handle, ctypes.c_int.in_dll(cuda, "hetkern_cuda_launch_shim").value)
            print(cuda.cuInit(0), fake.fake_inits())  # the driver's own, through the shim's dependency
        """)
        self.assertEqual(out, ["True", "1", "0", "1"])

    def test_launches_past_48k_opt_in_once_and_others_pass_untouched(self):
        out = run("""
            print(run(5, 16 * 1024), fake.fake_set_calls())    # within 48 KB: no opt-in
            print(run(6, 48 * 1024), fake.fake_set_calls())
            print(run(7, 96 * 1024), fake.fake_set_calls())    # opted in, then launched
            print(run(7, 80 * 1024), fake.fake_set_calls())    # already allows it
            print(run(7, 120 * 1024), fake.fake_set_calls())   # more than it allows: again
            print(fake.fake_launches(), fake.fake_launched(7))
        """)
        self.assertEqual(out, ["0", "0", "0", "0", "0", "1", "0", "1", "0", "2", "5", str(120 * 1024)])

    def test_a_refused_opt_in_fails_the_launch_with_the_drivers_error(self):
        out = run("""
            print(run(13, 64 * 1024), fake.fake_launches(), fake.fake_set_calls())
            print(run(13, 32 * 1024), fake.fake_launches())
        """)
        self.assertEqual(out, ["1", "0", "1", "0", "1"])


if __name__ == "__main__":
    unittest.main()
