#!/usr/bin/python3
"""tools/qmm-ab.sh: both trees run each case in turns (here one build given twice), every record is
kept with its build, the table's medians are those of the records, and bad usage exits with
status 2 and a reason.
usage: test_qmm_ab.py TOOL TREE
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import unittest

TOOL = TREE = None


def run(*args, **env):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=300, env=dict(os.environ, **env))


class QmmAb(unittest.TestCase):
    def test_cases_in_turns(self):
        cases = ["16,24,40 1 portable", "20,64,100 2 avx2 --packed-b"]
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "ab.jsonl")
            result = run(TREE, TREE, *cases, QMM_AB_ROUNDS="2", QMM_AB_MIN_TIME="0", QMM_AB_OUT=out)
            self.assertEqual(result.returncode, 0, result.stderr)
            records = [json.loads(line) for line in open(out)]
        self.assertEqual([r["build"] for r in records], ["old", "new"] * 4)
        self.assertEqual([r["shape"] for r in records], [[16, 24, 40]] * 4 + [[20, 64, 100]] * 4)
        self.assertEqual([r["threads"] for r in records], [1] * 4 + [2] * 4)
        self.assertEqual([r["packed_b"] for r in records], [False] * 4 + [True] * 4)
        self.assertEqual({r["b_range"][0] for r in records} | {r["b_range"][1] for r in records}, {-64, 63})
        for shape, group in [("16x24x40", records[:4]), ("20x64x100", records[4:])]:
            rows = [line for line in result.stdout.splitlines() if line.startswith(f"| {shape} |")]
            self.assertEqual(len(rows), 1, result.stdout)
            cells = [c.strip() for c in rows[0].strip("|").split("|")]
            old = [r for r in group if r["build"] == "old"]
            new = [r for r in group if r["build"] == "new"]
            times = f"{statistics.median(r['median_ns'] for r in old) / 1e6:.3f} / " \
                    f"{statistics.median(r['median_ns'] for r in new) / 1e6:.3f} ms"
            self.assertEqual(cells[4], times)
            if any(r["onednn_median_ns"] is None for r in group):
                self.assertIn("no oneDNN", cells[5])
                continue
            for cell, runs in [(cells[6], old), (cells[7], new)]:
                self.assertTrue(cell.startswith(f"{statistics.median(r['time_vs_baseline'] for r in runs):.3f} ("),
                                cell)

    def test_bad_usage(self):
        result = run(TREE)
        self.assertEqual(result.returncode, 2)
        self.assertIn("usage", result.stderr)
        result = run(TREE, "/nonexistent")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no hetkern program at /nonexistent/bin/hetkern", result.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    TOOL, TREE = sys.argv.pop(1), sys.argv.pop(1)
    unittest.main()
