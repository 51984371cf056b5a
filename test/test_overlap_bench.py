#!/usr/bin/python3
"""hetkern-overlap-bench: every variant is measured and reported against the copy, at one thread and
at several, and bad input exits with status 2 and one line on stderr. Small buffers and no minimum
time keep it fast; the ratios themselves are the machine's, so only their consistency is checked.
usage: test_overlap_bench.py PATH/TO/hetkern-overlap-bench
"""
import json
import os
import subprocess
import sys
import unittest

PROGRAM = None
VARIANTS = {  # name: (additions per 128 bytes, request, stream)
    "copy + 16 additions": (16, "none", "copy"),
    "copy + 32 additions": (32, "none", "copy"),
    "copy + 48 additions": (48, "none", "copy"),
    "copy + 64 additions": (64, "none", "copy"),
    "copy, L1 requests 8 KiB ahead": (0, "l1", "copy"),
    "copy + 16 additions, L1 requests 8 KiB ahead": (16, "l1", "copy"),
    "copy + 32 additions, L1 requests 8 KiB ahead": (32, "l1", "copy"),
    "copy + 48 additions, L1 requests 8 KiB ahead": (48, "l1", "copy"),
    "copy + 64 additions, L1 requests 8 KiB ahead": (64, "l1", "copy"),
    "copy, L2 requests 16 KiB ahead": (0, "l2", "copy"),
    "copy + 32 additions, L2 requests 16 KiB ahead": (32, "l2", "copy"),
    "copy + 64 additions, L2 requests 16 KiB ahead": (64, "l2", "copy"),
    "copy by ordinary stores": (0, "none", "stored"),
    "copy by ordinary stores + 32 additions": (32, "none", "stored"),
    "copy by ordinary stores + 64 additions": (64, "none", "stored"),
    "reads": (0, "none", "reads"),
    "reads + 32 additions": (32, "none", "reads"),
}


def run(*args):
    return subprocess.run([PROGRAM, *map(str, args)], capture_output=True, text=True, timeout=120)


class OverlapBench(unittest.TestCase):
    def records(self, *args):
        result = run("--mib", 2, "--min-time", 0, "--json", *args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return [json.loads(line) for line in result.stdout.splitlines()]

    def check(self, records, threads):
        self.assertEqual([r["variant"] for r in records], list(VARIANTS))
        for r in records:
            additions, request, stream = VARIANTS[r["variant"]]
            self.assertEqual(r["additions_per_128_bytes"], additions)
            self.assertEqual(r["request"], request)
            self.assertEqual(r["stream"], stream)
            self.assertEqual(r["threads"], threads)
            self.assertIn(r["isa"], ("avx512", "avx2"))
            self.assertGreater(r["copy_median_ns"], 0)
            moved = 2 * ((2 << 20) // threads // 128 * 128) * threads
            self.assertAlmostEqual(r["copy_gbps"], moved / r["copy_median_ns"])
            self.assertAlmostEqual(r["time_vs_copy"], r["median_ns"] / r["copy_median_ns"])
            self.assertLessEqual(r["q1_vs_copy"], r["time_vs_copy"])
            self.assertLessEqual(r["time_vs_copy"], r["q3_vs_copy"])
            self.assertGreater(r["in_cache_ns_per_128_bytes"], 0)
        # The copy's own time is one measurement for all variants.
        self.assertEqual(len({r["copy_median_ns"] for r in records}), 1)

    def test_one_thread(self):
        self.check(self.records(), 1)

    def test_threads_share_the_buffers(self):
        self.check(self.records("--threads", 3), 3)

    def test_table(self):
        result = run("--mib", 1, "--min-time", 0)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("| variant | time over the copy's (median) | q1-q3 | in cache, ns per 128 bytes |", result.stdout)
        for name in VARIANTS:
            self.assertIn(f"| {name} | ", result.stdout)

    def test_bad_input(self):
        for args, message in [(["--mib", "0"], "--mib takes a whole number from 1 to 65536"),
                              (["--mib", "x"], "--mib takes a whole number"),
                              (["--threads"], "--threads needs a value"),
                              (["--threads", "5000"], "--threads takes a whole number from 1 to 4096"),
                              (["--min-time", "-1"], "--min-time takes seconds from 0 to 3600"),
                              (["--min-time", "nan"], "--min-time takes seconds"),
                              (["--frobnicate"], "unknown argument --frobnicate")]:
            result = run(*args)
            self.assertEqual(result.returncode, 2, args)
            self.assertEqual(result.stdout, "")
            self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
            self.assertIn(message, result.stderr)

    def test_buffers_larger_than_the_machine(self):
        machine_mib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1 << 20)
        mib = machine_mib // 2 + 1
        if mib > 65536:
            self.skipTest(f"{machine_mib} MiB of memory: more than two buffers of the largest --mib")
        result = run("--mib", mib, "--min-time", 0)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(result.stdout, "")
        self.assertEqual(result.stderr, f"hetkern-overlap-bench: two buffers of {mib} MiB need more than this "
                                        f"machine's {machine_mib} MiB of memory; try a smaller --mib\n")

if __name__ == "__main__":
    PROGRAM = sys.argv.pop(1)
    unittest.main()
