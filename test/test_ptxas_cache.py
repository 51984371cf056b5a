#!/usr/bin/env python3
"""The GPU kernel cache's ptxas (runtime/platform/ptxas_cache.sh) against a stand-in for CUDA's
ptxas that counts its runs: a cubin is made once per PTX and options and copied afterwards,
hetkern's PTX alone is kept and only beside its cubin, failures pass through and leave nothing
behind, and a cache that cannot be written still gives the cubin, with one warning.

usage: test_ptxas_cache.py PATH/TO/lib/hetkern/ptxas
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

WRAPPER = None

FAKE_PTXAS = """#!/bin/sh
# Stand-in for CUDA's ptxas: counts its runs, writes "cubin of" + the input to --output-file, and
# records the architecture it was asked for in the file "arch".
echo run >> "$(dirname "$0")/runs"
out="" in=""
while [ $# -gt 0 ]; do
  case $1 in
    --output-file) out=$2; shift ;;
    --gpu-name) echo "$2" > "$(dirname "$0")/arch"; shift ;;
    -*) ;;
    *) in=$1 ;;
  esac
  shift
done
grep -q syntax-error "$in" && { echo "ptxas: syntax error" >&2; exit 3; }
{ printf 'cubin of '; cat "$in"; } > "$out"
"""


class PtxasCache(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hetkern-ptxas-")
        self.real = os.path.join(self.dir, "cuda-bin")
        os.mkdir(self.real)
        with open(os.path.join(self.real, "ptxas"), "w") as f:
            f.write(FAKE_PTXAS)
        os.chmod(os.path.join(self.real, "ptxas"), 0o755)
        self.cache = os.path.join(self.dir, "cache")
        os.mkdir(self.cache)
        self.env = dict(os.environ, PATH=f"{os.path.dirname(WRAPPER)}:{self.real}:/usr/bin:/bin",
                        HETKERN_GPU_CACHE_DIR=self.cache)
        self.env.pop("HETKERN_GPU_CACHE_PTX", None)

    def tearDown(self):
        os.chmod(self.cache, 0o755)
        shutil.rmtree(self.dir)

    def runs(self):
        path = os.path.join(self.real, "runs")
        return len(open(path).readlines()) if os.path.exists(path) else 0

    def ptx(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def ptxas(self, source, arch="sm_90", env=None):
        out = os.path.join(self.dir, "out.cubin")
        if os.path.exists(out):
            os.remove(out)
        r = subprocess.run([WRAPPER, "-m64", "-O2", "--gpu-name", arch, "--output-file", out, source],
                           capture_output=True, text=True, env=env or self.env, timeout=60)
        text = open(out).read() if os.path.exists(out) else None
        return r, text

    def test_second_run_copies_the_kept_cubin(self):
        source = self.ptx("a.s", ".target sm_90\nkernel one\n")
        r, first = self.ptxas(source)
        self.assertEqual((r.returncode, r.stderr, first), (0, "", "cubin of .target sm_90\nkernel one\n"))
        self.assertEqual(self.runs(), 1)
        r, second = self.ptxas(source)
        self.assertEqual((r.returncode, second), (0, first))
        self.assertEqual(self.runs(), 1)
        self.assertEqual(len([f for f in os.listdir(self.cache) if f.endswith(".cubin")]), 1)

    def test_other_ptx_or_options_make_another_cubin(self):
        source = self.ptx("a.s", "kernel one\n")
        self.ptxas(source)
        self.ptxas(source, arch="sm_80")
        self.ptxas(self.ptx("b.s", "kernel two\n"))
        self.assertEqual(self.runs(), 3)
        self.assertEqual(len(os.listdir(self.cache)), 3)

    def test_only_hetkerns_ptx_is_kept(self):
        keep = os.path.join(self.cache, "image-sm_90.ptx")
        env = dict(self.env, HETKERN_GPU_CACHE_PTX=keep)
        self.ptxas(self.ptx("other.s", "someone else's kernels\n"), env=env)
        self.assertFalse(os.path.exists(keep))
        ours = "// hetkern\n.visible .global .align 4 .u32 hetkern_gpu_image_marker = 1;\n"
        self.ptxas(self.ptx("ours.s", ours), env=env)
        self.assertEqual(open(keep).read(), ours)
        # A kept PTX is never overwritten by a later one.
        self.ptxas(self.ptx("ours2.s", ours + "changed\n"), env=env)
        self.assertEqual(open(keep).read(), ours)

    def test_ptx_is_kept_only_with_its_cubin(self):
        # A kept PTX tells later processes that they need no CUDA ptxas: never without the cubin.
        keep = os.path.join(self.cache, "image-sm_90.ptx")
        env = dict(self.env, HETKERN_GPU_CACHE_PTX=keep)
        marker = ".visible .global .align 4 .u32 hetkern_gpu_image_marker = 1;\n"
        r, _ = self.ptxas(self.ptx("bad.s", marker + "syntax-error\n"), env=env)
        self.assertEqual(r.returncode, 3)
        self.assertEqual(os.listdir(self.cache), [])
        # A cubin made by a process that kept no PTX (the runtime loaded before hetkern) is found,
        # and the PTX is kept then.
        source = self.ptx("ours.s", marker)
        self.ptxas(source)
        self.assertFalse(os.path.exists(keep))
        runs = self.runs()
        r, text = self.ptxas(source, env=env)
        self.assertEqual((r.returncode, text), (0, "cubin of " + marker))
        self.assertEqual(self.runs(), runs)
        self.assertEqual(open(keep).read(), marker)

    def test_failure_passes_through_and_keeps_nothing(self):
        r, _ = self.ptxas(self.ptx("bad.s", "syntax-error\n"))
        self.assertEqual(r.returncode, 3)
        self.assertIn("ptxas: syntax error", r.stderr)
        self.assertEqual(os.listdir(self.cache), [])

    def test_unwritable_cache_still_gives_the_cubin_with_one_warning(self):
        if os.geteuid() == 0:
            self.env["HETKERN_GPU_CACHE_DIR"] = os.path.join(self.dir, "missing", "cache")
        else:
            os.chmod(self.cache, 0o555)
        r, text = self.ptxas(self.ptx("a.s", "kernel one\n"))
        self.assertEqual((r.returncode, text), (0, "cubin of kernel one\n"))
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("warning: could not write", r.stderr)

    def test_without_a_cache_folder_it_is_plain_ptxas(self):
        env = dict(self.env)
        del env["HETKERN_GPU_CACHE_DIR"]
        source = self.ptx("a.s", "kernel one\n")
        self.ptxas(source, env=env)
        self.ptxas(source, env=env)
        self.assertEqual(self.runs(), 2)

    def arch(self):
        return open(os.path.join(self.real, "arch")).read().strip()

    def test_warpgroup_mma_is_built_for_sm_90a_with_or_without_a_cache(self):
        header = ".version 7.8\n.target sm_90\n.address_size 64\n"
        body = "wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.s8 {...};\n"
        self.env["TMPDIR"] = self.dir  # where the rewritten copy lives until ptxas is done
        without = dict(self.env)
        del without["HETKERN_GPU_CACHE_DIR"]
        for env in (self.env, without):
            r, text = self.ptxas(self.ptx("hopper.s", header + body), env=env)
            self.assertEqual((r.returncode, r.stderr), (0, ""))
            self.assertEqual(text, "cubin of .version 8.4\n.target sm_90a\n.address_size 64\n" + body)
            self.assertEqual(self.arch(), "sm_90a")
        # Already sm_90a (a kept PTX), other architectures and PTX without wgmma stay as they are.
        for source, arch, expected in ((".version 8.5\n.target sm_90a\n" + body, "sm_90", "sm_90a"),
                                       (header + body, "sm_80", "sm_80"),
                                       (header + "mma.sync;\n", "sm_90", "sm_90")):
            r, text = self.ptxas(self.ptx("other.s", source), arch=arch)
            self.assertEqual((r.returncode, text.replace("sm_90a", "sm_90")), (0, "cubin of " + source.replace("sm_90a", "sm_90")))
            self.assertEqual(self.arch(), expected)
        self.assertEqual([f for f in os.listdir(self.dir) if f.startswith("hetkern-sm_90a")], [])

    def test_no_real_ptxas_is_named(self):
        env = dict(self.env, PATH=f"{os.path.dirname(WRAPPER)}:/usr/bin:/bin")
        if shutil.which("ptxas", path="/usr/bin:/bin"):
            self.skipTest("this machine has a ptxas in /usr/bin")
        r, text = self.ptxas(self.ptx("a.s", "kernel one\n"), env=env)
        self.assertEqual((r.returncode, text), (127, None))
        self.assertIn("ptxas is not on PATH", r.stderr)


if __name__ == "__main__":
    WRAPPER = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=1)
