#!/usr/bin/python3
"""`hetkern tune` end to end: records in the database, resume after a kill, Ctrl-C, export/import,
two tuners on one database, dispatch of tuned records, a corrupt database.

Outputs of dispatched calls are checked against numpy. usage: test_cli_tune.py PATH/TO/hetkern
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

HETKERN = None
SHAPES = [
    "cumsum --shape 64,48 --dtype float32 --axis 1",
    "cumprod --shape 33,20 --dtype float32 --axis 0 --direction decreasing",
    "qlinear-matmul --shape 8,40,64 --types u8,s8,u8",
    "cumsum --shape 5,3000 --dtype int32 --axis 1 --exclusive",
]


def run(*args, env=None):
    return subprocess.run([HETKERN, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)


class Tune(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.db = os.path.join(self.dir, "t.sqlite")
        self.env = dict(os.environ, HETKERN_TUNING_DB=self.db)
        self.env.pop("HETKERN_SCHEDULE", None)
        self.env.pop("HETKERN_LOG", None)

    def tearDown(self):
        self.tmp.cleanup()

    def shapes_file(self, lines, name="shapes.txt"):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write("# workload shapes\n\n" + "\n".join(lines) + "\n")
        return path

    def export(self, db=None):
        out = os.path.join(self.dir, "export.json")
        r = run("tune", "--export", out, "--db", db or self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            return json.load(f)

    def test_tune_list_resume_retune(self):
        r = run("tune", "cumsum", "--shape", "64,48", "--dtype", "float32", "--axis", "1", "--budget", "2", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("best schedule", r.stdout)
        records = self.export()
        self.assertEqual(len(records), 1)
        rec = records[0]
        for key in ("op", "dtype", "shape", "params", "schedule", "median_ns", "fingerprint"):
            self.assertIn(key, rec)
        self.assertEqual((rec["op"], rec["dtype"], rec["shape"]), ("cumulative_sum", "float32", [64, 48]))
        self.assertGreater(rec["median_ns"], 0)
        listing = run("tune", "--list", env=self.env)
        self.assertEqual(listing.returncode, 0, listing.stderr)
        self.assertIn(rec["schedule"], listing.stdout)
        again = run("tune", "cumsum", "--shape", "64,48", "--dtype", "float32", "--axis", "1", env=self.env)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("already tuned", again.stderr)
        retuned = run("tune", "--retune", "cumsum", "--shape", "64,48", "--dtype", "float32", "--axis", "1", env=self.env)
        self.assertEqual(retuned.returncode, 0, retuned.stderr)
        self.assertNotIn("already tuned", retuned.stderr)

    def test_dispatch_uses_the_record_and_logs_it(self):
        x = np.random.default_rng(3).standard_normal((64, 48)).astype(np.float32)
        inp, out = os.path.join(self.dir, "x.npy"), os.path.join(self.dir, "y.npy")
        np.save(inp, x)
        self.assertEqual(run("tune", "cumsum", "--shape", "64,48", "--dtype", "float32", "--axis", "1",
                             env=self.env).returncode, 0)
        schedule = self.export()[0]["schedule"]
        env = dict(self.env, HETKERN_LOG="dispatch")
        r = run("run", "cumsum", inp, out, "--axis", "1", env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("-> " + schedule + " on host CPU (exact record", r.stderr)
        np.testing.assert_allclose(np.load(out), np.cumsum(x.astype(np.float64), axis=1), rtol=1e-6, atol=1e-5)
        # A shape near the tuned one takes its schedule; HETKERN_SCHEDULE overrides both.
        np.save(inp, x[:60, :40])
        r = run("run", "cumsum", inp, out, "--axis", "1", env=env)
        self.assertIn("-> " + schedule + " on host CPU (nearest tuned shape 64,48", r.stderr)
        r = run("run", "cumsum", inp, out, "--axis", "1", env=dict(env, HETKERN_SCHEDULE="scan.tiled(tile=3)"))
        self.assertIn("-> scan.tiled(tile=3, stream=0) on host CPU (HETKERN_SCHEDULE)", r.stderr)
        np.testing.assert_allclose(np.load(out), np.cumsum(x[:60, :40].astype(np.float64), axis=1), rtol=1e-6, atol=1e-5)

    def test_unusable_record_warns_and_the_log_says_why_the_heuristic_decided(self):
        import sqlite3
        self.assertEqual(run("tune", "cumsum", "--shape", "3,4", "--dtype", "int32", "--axis", "1",
                             "--budget", "2", env=self.env).returncode, 0)
        connection = sqlite3.connect(self.db)
        connection.execute("UPDATE records SET schedule = 'scan.tiled(tile=0)'")
        connection.commit()
        connection.close()
        stderr = self.run_warns_once_and_computes(dict(self.env, HETKERN_LOG="dispatch"))
        self.assertIn("holds an unusable schedule", stderr)
        self.assertIn("(heuristic, no usable tuning record", stderr)
        self.assertIn("the exact record's scan.tiled(tile=0) is unusable", stderr)
        self.assertNotIn("no tuning record", stderr)

    def test_new_types_and_negative_axes(self):
        """float64 and bfloat16 tune like the spec's types; a negative axis is stored as the axis
        it names, so that a later call with either spelling finds the record."""
        for dtype, shape in (("float64", "40,30"), ("bfloat16", "2,600")):
            with self.subTest(dtype=dtype):
                r = run("tune", "cumsum", "--shape", shape, "--dtype", dtype, "--axis", "-1", "--budget", "2",
                        env=self.env)
                self.assertEqual(r.returncode, 0, r.stderr)
        records = {rec["dtype"]: rec for rec in self.export()}
        self.assertEqual(sorted(records), ["bfloat16", "float64"])
        for rec in records.values():
            self.assertIn("axis=1,", rec["params"])
        x = np.random.default_rng(5).standard_normal((40, 30))
        inp, out = os.path.join(self.dir, "x.npy"), os.path.join(self.dir, "y.npy")
        np.save(inp, x)
        for axis in ("1", "-1"):
            r = run("run", "cumsum", inp, out, "--axis", axis, env=dict(self.env, HETKERN_LOG="dispatch"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("-> " + records["float64"]["schedule"] + " on host CPU (exact record", r.stderr)
            np.testing.assert_allclose(np.load(out), np.cumsum(x, axis=1), rtol=1e-13, atol=1e-13)

    def run_warns_once_and_computes(self, env=None):
        """An int32 {3,4} call along axis 1 with the database at self.db (env: self.env): one
        warning, the right result; returns stderr."""
        x = np.arange(12, dtype=np.int32).reshape(3, 4)
        inp, out = os.path.join(self.dir, "x.npy"), os.path.join(self.dir, "y.npy")
        np.save(inp, x)
        r = run("run", "cumsum", inp, out, "--axis", "1", env=env or self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.count("warning"), 1, r.stderr)
        np.testing.assert_array_equal(np.load(out), np.cumsum(x, axis=1))
        return r.stderr

    def test_corrupt_database_warns_and_still_computes(self):
        with open(self.db, "wb") as f:
            f.write(b"this is not a database" * 100)
        self.run_warns_once_and_computes()
        r = run("tune", "--list", env=self.env)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)

    def test_database_of_something_else_is_refused_and_left_as_it_is(self):
        import sqlite3
        connection = sqlite3.connect(self.db)
        connection.execute("CREATE TABLE notes(x)")
        connection.execute("INSERT INTO notes VALUES('mine')")
        connection.commit()
        connection.close()
        with open(self.db, "rb") as f:
            before = f.read()
        self.assertIn("not a hetkern tuning database", self.run_warns_once_and_computes())
        for args in (["tune", "--list"], ["tune", "cumsum", "--shape", "3,4", "--dtype", "float32", "--axis", "1"]):
            r = run(*args, env=self.env)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn("not a hetkern tuning database", r.stderr)
        with open(self.db, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertFalse(os.path.exists(self.db + "-wal"))

    def test_bad_shapes_are_refused_before_anything_is_allocated(self):
        # Each of these once allocated the problem first, then reported no memory (exit 1), an
        # overflow (exit 1), or the bad axis after filling 8 GB. (Not under `ulimit -v`, which
        # the sanitizers' shadow memory cannot run under: the child's peak memory is read instead.)
        cases = [(["qlinear-matmul", "--shape", "1,1,140737488355328"], "2^47"),
                 (["qlinear-matmul", "--shape", "65536,65536,140737488355328"], "64 bits"),
                 (["cumsum", "--shape", "1000000000", "--dtype", "float32", "--axis", "5"], "axis")]
        for args, phrase in cases:
            with self.subTest(args=args):
                child = subprocess.Popen([HETKERN, "tune", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         text=True, env=self.env)
                stderr = child.stderr.read()
                child.stderr.close()
                _, status, usage = os.wait4(child.pid, 0)
                child.returncode = os.waitstatus_to_exitcode(status)
                self.assertEqual(child.returncode, 2, stderr)
                self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)
                self.assertIn(phrase, stderr)
                self.assertLess(usage.ru_maxrss, 500 * 1024, "peak resident KiB")
        self.assertFalse(os.path.exists(self.db))

    def test_export_import_round_trip(self):
        path = self.shapes_file(SHAPES[:3])
        self.assertEqual(run("tune", "--shapes", path, "--budget", "2", env=self.env).returncode, 0)
        exported = self.export()
        self.assertEqual(len(exported), 3)
        other = os.path.join(self.dir, "other.sqlite")
        r = run("tune", "--import", os.path.join(self.dir, "export.json"), "--db", other)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.export(other), exported)
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write('[{"op": "cumulative_sum"}]')
        r = run("tune", "--import", bad, "--db", other)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(self.export(other), exported)

    def test_bad_shapes_file_writes_nothing(self):
        # Lines that parse but do not validate name their line too.
        for line in ("cumsum --shape 4,4 --dtype float32 --axis 7", "qlinear-matmul --shape 16,16"):
            path = self.shapes_file([SHAPES[0], line])
            r = run("tune", "--shapes", path, env=self.env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("shapes.txt:4", r.stderr)
        for args in (["--shapes", self.dir], ["--import", self.dir], ["--db", self.dir, "--list"],
                     ["--db", self.dir, *SHAPES[0].split()]):
            r = run("tune", *args, env=self.env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("is a directory", r.stderr)
        path = self.shapes_file([SHAPES[0], "transpose --shape 4,4"])
        r = run("tune", "--shapes", path, env=self.env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("shapes.txt:4", r.stderr)
        # Extras named in the line's order, --help refused in words, control bytes escaped.
        for line, message in ((SHAPES[0] + " --db /tmp/x extra", "not expected in a shapes line: --db /tmp/x extra"),
                              (SHAPES[0] + " --help", "--help is no option of a shapes line"),
                              ("\x1b[2Jsum --shape 4", "unknown operator '\\x1b[2Jsum'")):
            r = run("tune", "--shapes", self.shapes_file([line]), env=self.env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("shapes.txt:3: " + message, r.stderr)
            self.assertNotIn("\x1b", r.stderr)
        r = run("tune", "--shapes", os.path.join(self.dir, "missing.txt"), env=self.env)
        self.assertIn("cannot be read: No such file or directory", r.stderr)
        self.assertEqual(self.export(), [])

    def test_list_tells_other_settings_from_another_machine(self):
        threads = json.loads(run("info", "--json").stdout)["threads"]
        if threads < 2:
            self.skipTest("one thread by default: --threads 1 is this machine's own setting")
        r = run("tune", "--threads", "1", "cumsum", "--shape", "8,64", "--dtype", "float32", "--axis", "1",
                "--budget", "0.2", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        records = self.export()
        records.append(dict(records[0], fingerprint="cpu=Another CPU;isa=avx2;threads=4"))
        imported = os.path.join(self.dir, "imported.json")
        with open(imported, "w") as f:
            json.dump(records, f)
        self.assertEqual(run("tune", "--import", imported, env=self.env).returncode, 0)
        listing = run("tune", "--list", env=self.env).stdout
        self.assertIn("[this machine, other settings: threads=1]", listing)
        self.assertIn("[other machine: cpu=Another CPU;isa=avx2;threads=4]", listing)

    def test_list_escapes_control_bytes_of_imported_records(self):
        self.assertEqual(run("tune", "--shapes", self.shapes_file(SHAPES[:1]), "--budget", "1", env=self.env).returncode, 0)
        records = self.export()
        records[0]["fingerprint"] = "x\u001b]0;title\u0007\u001b[2J"
        imported = os.path.join(self.dir, "imported.json")
        with open(imported, "w") as f:
            json.dump(records, f)
        self.assertEqual(run("tune", "--import", imported, env=self.env).returncode, 0)
        listing = run("tune", "--list", env=self.env)
        self.assertEqual(listing.returncode, 0, listing.stderr)
        self.assertIn("x\\x1b]0;title\\x07\\x1b[2J", listing.stdout)
        self.assertNotIn("\x1b", listing.stdout)

    def test_two_tuners_on_one_database(self):
        a = self.shapes_file(SHAPES[:2], "a.txt")
        b = self.shapes_file(SHAPES[2:], "b.txt")
        procs = [subprocess.Popen([HETKERN, "tune", "--shapes", p, "--budget", "2"], env=self.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in (a, b)]
        for p in procs:
            _, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err)
        self.assertEqual(len(self.export()), 4)

    def test_killed_tuner_keeps_finished_records_and_resumes(self):
        path = self.shapes_file(SHAPES + ["cumsum --shape 300,300 --dtype float32 --axis 0",
                                          "cumprod --shape 3000,17 --dtype float32 --axis 1"])
        p = subprocess.Popen([HETKERN, "tune", "--shapes", path], env=self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        finished = 0
        while time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
            if os.path.exists(self.db):
                finished = len(self.export())
                if finished >= 1:
                    break
        p.send_signal(signal.SIGKILL)
        p.communicate()
        kept = self.export()
        self.assertGreaterEqual(len(kept), 1)
        r = run("tune", "--shapes", path, "--budget", "2", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.count("already tuned"), len(kept))
        self.assertEqual(len(self.export()), 6)

    def test_ctrl_c_prints_the_summary_of_what_finished_and_exits_130(self):
        # A quick first shape, then products that take seconds each: Ctrl-C lands in the second.
        shapes = [SHAPES[0]] + [f"qlinear-matmul --shape {n},{n},{n} --types u8,s8,u8" for n in (512, 384, 448)]
        path = self.shapes_file(shapes)
        p = subprocess.Popen([HETKERN, "tune", "--shapes", path, "--budget", "4"], env=self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = ""
        while "[2/4]" not in seen:  # the first shape is done, the second under way
            line = p.stderr.readline()
            self.assertTrue(line, "tune ended before its second shape: " + seen)
            seen += line
        p.send_signal(signal.SIGINT)
        start = time.time()
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 130, seen + err)
        self.assertLess(time.time() - start, 30, "the shape under way was not abandoned")
        match = re.search(r"interrupted \(Ctrl-C\): (\d+) of 4 shapes done", err)
        self.assertTrue(match, err)
        done = int(match.group(1))
        self.assertTrue(1 <= done < 4, done)
        self.assertIn("interrupted, not recorded", err)
        # The summary holds a row per finished shape, and so does the database; nothing else.
        rows = out.strip().splitlines()
        self.assertIn("best schedule", rows[0])
        self.assertEqual(len(rows) - 1, done, out)
        self.assertTrue(rows[1].startswith(SHAPES[0]), rows[1])
        self.assertEqual(len(self.export()), done)

    def test_ctrl_c_ends_an_evaluation_with_the_tallies_of_what_finished(self):
        p = subprocess.Popen([HETKERN, "tune", "--evaluate", "--evaluate-only", "cumsum", "--budget", "0.2"],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = ""
        while "{1000}" not in seen:  # two shapes evaluated
            line = p.stdout.readline()
            self.assertTrue(line, "the evaluation ended early: " + seen)
            seen += line
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 130, err)
        match = re.search(r"interrupted \(Ctrl-C\): (\d+) of 30 shapes evaluated", err)
        self.assertTrue(match, err)
        self.assertRegex(seen + out, r"cumsum +%s shapes: tuned within 5%%" % match.group(1))

    def test_ctrl_c_ignored_on_entry_stays_ignored(self):
        # As under nohup: the run was meant to be immune to SIGINT, and finishes every shape.
        path = self.shapes_file(SHAPES[:2])
        p = subprocess.Popen([HETKERN, "tune", "--shapes", path, "--budget", "1"], env=self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        seen = ""
        while "[1/2]" not in seen:
            line = p.stderr.readline()
            self.assertTrue(line, "tune ended before its first shape: " + seen)
            seen += line
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, seen + err)
        self.assertNotIn("interrupted", err)
        self.assertEqual(len(self.export()), 2)

    def test_export_to_standard_output(self):
        self.assertEqual(run("tune", "--shapes", self.shapes_file(SHAPES[:1]), "--budget", "1", env=self.env).returncode, 0)
        r = run("tune", "--export", "-", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), self.export())
        self.assertIn("exported 1 records", r.stderr)
        # and back from standard input into another database.
        other = os.path.join(self.dir, "other.sqlite")
        imported = subprocess.run([HETKERN, "tune", "--import", "-", "--db", other], input=r.stdout,
                                  capture_output=True, text=True, timeout=60)
        self.assertEqual(imported.returncode, 0, imported.stderr)
        self.assertEqual(self.export(db=other), self.export())

    def test_export_onto_the_database_is_refused(self):
        self.assertEqual(run("tune", "--shapes", self.shapes_file(SHAPES[:1]), "--budget", "1", env=self.env).returncode, 0)
        before = self.export()
        link = os.path.join(self.dir, "link.sqlite")
        os.symlink(self.db, link)
        within = os.path.join(self.dir, ".", os.path.basename(self.db))
        for target in (self.db, within, link, self.db + "-wal", self.db + "-journal"):
            r = run("tune", "--export", target, env=self.env)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertIn("is the tuning database", r.stderr)
        self.assertEqual(self.export(), before)
        self.assertFalse(os.path.exists(self.db + "-journal"))

    def test_list_of_a_database_not_made_yet(self):
        missing = os.path.join(self.dir, "missing.sqlite")
        r = run("tune", "--list", "--db", missing, env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no database there yet", r.stdout)
        self.assertFalse(os.path.exists(missing))

    def test_calibrate_list_and_clear_rates(self):
        # Rates are measured only with a GPU: on the host fallback nothing is stored.
        r = run("tune", "--calibrate", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        gpu = "machine rates stored" in r.stdout
        if not gpu:
            self.assertIn("no GPU", r.stdout)
        listing = run("tune", "--list", env=self.env)
        self.assertEqual(listing.returncode, 0, listing.stderr)
        self.assertEqual("machine rates:" in listing.stdout, gpu, listing.stdout)
        cleared = run("tune", "--clear-rates", env=self.env)
        self.assertEqual(cleared.returncode, 0, cleared.stderr)
        self.assertIn("cleared" if gpu else "no machine rates stored", cleared.stdout)
        self.assertNotIn("machine rates:", run("tune", "--list", env=self.env).stdout)

    def test_usage_errors(self):
        for args in (["tune"], ["tune", "--list", "--export", "x.json"], ["tune", "--calibrate", "--clear-rates"],
                     ["tune", "cumsum", "--shape", "4", "--dtype", "float99", "--axis", "0"],
                     ["tune", "qlinear-matmul", "--shape", "4,4"],
                     ["tune", "--shapes", os.path.join(self.dir, "missing.txt")],
                     *(["tune", "--budget", b, "cumsum", "--shape", "4", "--dtype", "float32", "--axis", "0"]
                       for b in ("nan", "inf", "0", "-1", "1e6"))):
            r = run(*args, env=self.env)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        # Two modes are named as such; --evaluate-only alone says what it narrows, measuring nothing.
        self.assertIn("at a time", run("tune", "--list", "--export", "-", env=self.env).stderr)
        for args in (["--evaluate-only", "cumsum"], ["--evaluate-only", "cumsum", *SHAPES[0].split()]):
            r = run("tune", *args, env=self.env)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("give --evaluate too", r.stderr)
            self.assertFalse(os.path.exists(self.db))
        # Nothing to clear makes no database.
        self.assertIn("no machine rates stored", run("tune", "--clear-rates", env=self.env).stdout)
        self.assertFalse(os.path.exists(self.db))

    def test_an_operator_and_another_mode_exclude_each_other(self):
        # Each used to tune the operator's shape alone and ignore the other mode.
        one = ["cumsum", "--shape", "64", "--dtype", "float32", "--axis", "0"]
        exported = os.path.join(self.dir, "out.json")
        for mode in (["--export", exported], ["--import", exported], ["--shapes", self.shapes_file(SHAPES[:1])],
                     ["--list"], ["--evaluate"], ["--calibrate"], ["--clear-rates"]):
            with self.subTest(mode=mode):
                r = run("tune", "--budget", "0.5", *mode, *one, env=self.env)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn("excludes", r.stderr)
                self.assertFalse(os.path.exists(exported))
                self.assertFalse(os.path.exists(self.db))


if __name__ == "__main__":
    HETKERN = sys.argv.pop(1)
    unittest.main()
