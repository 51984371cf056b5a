#!/usr/bin/python3
"""tools/offload-ab.sh: both plugins run the benches in turns (here one plugin given twice, on the
host fallback), every record is kept with its build, the table's medians are those of the records,
and bad usage or a plugin that does not load stops it with a reason.
usage: test_offload_ab.py TOOL PLUGIN BIN
"""
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import unittest

TOOL = PLUGIN = BIN = None


def run(*args, **env):
    env = {**os.environ, "BIN": BIN, "OMP_TARGET_OFFLOAD": "DISABLED", "OFFLOAD_AB_SCAN": "--quick --case chained",
           "OFFLOAD_AB_QMM": "32 32 64", **env}
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=600, env=env)


class OffloadAb(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp()
        self.out = os.path.join(self.folder, "ab.jsonl")
        self.old, self.new = (os.path.join(self.folder, name) for name in ("old.so", "new.so"))
        for path in (self.old, self.new):
            shutil.copy(PLUGIN, path)

    def tearDown(self):
        shutil.rmtree(self.folder)

    def test_plugins_in_turns(self):
        result = run(self.old, self.new, OFFLOAD_AB_ROUNDS="2", OFFLOAD_AB_OUT=self.out)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.out) as f:
            records = [json.loads(line) for line in f]
        builds = [r["build"] for r in records]
        turns = [b for i, b in enumerate(builds) if i == 0 or b != builds[i - 1]]
        self.assertEqual(turns, ["old", "new", "old", "new"])
        self.assertLessEqual({"scan", "qmm"}, {r["group"] for r in records})
        times = collections.defaultdict(lambda: {"old": [], "new": []})
        for r in records:
            times[(r["case"], r["impl"])][r["build"]].append(r["ms"])
        rows = {}
        for line in result.stdout.splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if line.startswith("| ") and len(cells) == 5 and cells[0] != "case":
                rows[(cells[0], cells[1])] = cells
        self.assertEqual(set(rows), set(times))
        for key, t in times.items():
            self.assertEqual((len(t["old"]), len(t["new"])), (2, 2), key)
            cells = rows[key]
            for cell, runs in [(cells[2], t["old"]), (cells[3], t["new"])]:
                self.assertEqual(cell, f"{statistics.median(runs):.4f} ({min(runs):.4f}-{max(runs):.4f})")
            new = statistics.median(t["new"])
            if new > 0:
                self.assertAlmostEqual(float(cells[4]), statistics.median(t["old"]) / new, delta=1e-3)

    def test_bad_usage(self):
        result = run(self.old)
        self.assertEqual(result.returncode, 2)
        self.assertIn("usage", result.stderr)
        result = run(self.old, "/nonexistent.so")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no plugin at /nonexistent.so", result.stderr)

    def test_a_plugin_that_does_not_load(self):
        with open(self.new, "wb") as f:
            f.write(b"not a shared library")
        result = run(self.old, self.new, OFFLOAD_AB_ROUNDS="1", OFFLOAD_AB_SCAN="none", OFFLOAD_AB_OUT=self.out)
        self.assertEqual(result.returncode, 1)
        self.assertIn("failed with the new plugin", result.stderr)
        self.assertIn("new/libhetkern_gpu.so", result.stderr)
        self.assertNotIn("| case |", result.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    TOOL, PLUGIN, BIN = sys.argv.pop(1), sys.argv.pop(1), sys.argv.pop(1)
    unittest.main()
