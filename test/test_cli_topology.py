#!/usr/bin/python3
"""`hetkern info` topology and binding plans, on synthetic topologies (HWLOC_SYNTHETIC) and with a
broken HWLOC_XMLFILE, and the pin parameter of schedules end to end. Expected counts come from the
synthetic description itself (hwloc numbers synthetic PUs in order: with P PUs per core, PU p is
on core p // P). usage: test_cli_topology.py PATH/TO/hetkern
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HETKERN = None
TWO_BY_TWO = "pack:2 numa:2 core:8 pu:2"  # PU p: core p//2, NUMA node p//16, package p//32


def run(*args, env=None, cpus=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("HWLOC_", "OMP_PLACES", "OMP_PROC_BIND", "HETKERN_PIN"))}
    full_env.update(env or {})
    narrow = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    return subprocess.run([HETKERN, *map(str, args)], capture_output=True, text=True, timeout=120, env=full_env,
                          preexec_fn=narrow)


def info_json(*args, env=None, cpus=None):
    r = run("info", "--json", *args, env=env, cpus=cpus)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return json.loads(r.stdout), r.stderr


class SyntheticTopology(unittest.TestCase):
    def test_counts_and_caches(self):
        d, err = info_json(env={"HWLOC_SYNTHETIC": "pack:2 l3:1(size=8388608) l2:4(size=1048576) core:1 pu:2"})
        self.assertEqual(err, "")
        self.assertTrue(d["topology_available"])
        self.assertEqual(d["source"], "synthetic")
        self.assertEqual((d["packages"], d["numa_nodes"], d["cores"], d["pus"]), (2, 1, 8, 16))
        caches = {(c["level"], c["size_bytes"]): c["count"] for c in d["caches"]}
        self.assertEqual(caches.get((3, 8388608)), 2)
        self.assertEqual(caches.get((2, 1048576)), 8)

    def test_every_policy_plan(self):
        for pin in ("compact", "scatter", "numa"):
            for threads in (1, 5, 16, 32, 40, 64):
                d, err = info_json("--threads", threads, "--pin", pin, env={"HWLOC_SYNTHETIC": TWO_BY_TWO})
                self.assertEqual((d["packages"], d["numa_nodes"], d["cores"], d["pus"]), (2, 4, 32, 64))
                b = d["binding"]
                self.assertEqual(d["threads"], threads)
                self.assertEqual(d["pin"], pin)
                self.assertEqual(len(b), threads)
                self.assertEqual(len(set(b)), threads, f"{pin} {threads}: a PU twice")
                self.assertTrue(all(0 <= p < 64 for p in b))
                self.assertEqual(d["binding_numa_nodes"], [p // 16 for p in b])
                if pin != "numa":
                    self.assertEqual(len({p // 2 for p in b}), min(threads, 32), f"{pin} {threads}: a core twice")
                # Synthetic: the plan is shown, nothing is bound, and the note says so.
                self.assertFalse(d["binding_applied"])
                self.assertIn("synthetic", d["note"])
                self.assertEqual(err, "")

    def test_compact_scatter_numa_shapes(self):
        env = {"HWLOC_SYNTHETIC": TWO_BY_TWO}
        compact, _ = info_json("--threads", 16, "--pin", "compact", env=env)
        self.assertEqual(compact["binding_numa_nodes"], [0] * 8 + [1] * 8)
        scatter, _ = info_json("--threads", 8, "--pin", "scatter", env=env)
        packages = [p // 32 for p in scatter["binding"]]
        self.assertTrue(all(a != b for a, b in zip(packages, packages[1:])), scatter["binding"])
        self.assertEqual(sorted(scatter["binding_numa_nodes"][:4]), [0, 1, 2, 3])
        numa, _ = info_json("--threads", 10, "--pin", "numa", env=env)
        nodes = numa["binding_numa_nodes"]
        self.assertEqual(nodes, sorted(nodes))
        self.assertTrue(all(nodes.count(n) in (2, 3) for n in range(4)), nodes)

    def test_none_binds_nothing(self):
        d, _ = info_json("--threads", 4, "--pin", "none", env={"HWLOC_SYNTHETIC": TWO_BY_TWO})
        self.assertEqual(d["binding"], [])

    def test_text_form(self):
        r = run("info", "--threads", 4, "--pin", "scatter", env={"HWLOC_SYNTHETIC": TWO_BY_TWO})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("topology: 2 packages, 4 NUMA nodes, 32 cores, 64 PUs (synthetic", r.stdout)
        self.assertIn("binding:  4 threads, pin=scatter:", r.stdout)
        self.assertIn("pin = none|compact|scatter|numa", r.stdout)


class ThisMachine(unittest.TestCase):
    def test_affinity_mask_limits_topology_and_plan(self):
        # As under taskset: only the CPUs of the process's affinity are counted and planned.
        for cpu in sorted(os.sched_getaffinity(0))[-2:]:
            d, err = info_json("--threads", 3, "--pin", "compact", cpus={cpu})
            self.assertEqual(err, "")
            if not d["topology_available"]:
                self.skipTest(d["reason"])
            self.assertEqual(d["source"], "this system")
            self.assertEqual(d["pus"], 1)
            self.assertEqual(d["binding"], [cpu] * 3)

    def test_plan_uses_only_allowed_cpus(self):
        allowed = os.sched_getaffinity(0)
        d, _ = info_json("--threads", len(allowed), "--pin", "scatter")
        if d["topology_available"]:
            self.assertEqual(set(d["binding"]), allowed)
            self.assertEqual(d["pus"], len(allowed))


class DefaultPolicy(unittest.TestCase):
    def test_hetkern_pin_sets_the_default(self):
        for pin in ("none", "compact", "scatter", "numa"):
            d, err = info_json("--threads", 4, env={"HETKERN_PIN": pin, "HWLOC_SYNTHETIC": TWO_BY_TWO})
            self.assertEqual(err, "")
            self.assertEqual(d["pin"], pin)
        d, err = info_json("--threads", 4, env={"HETKERN_PIN": "everywhere", "HWLOC_SYNTHETIC": TWO_BY_TWO})
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("HETKERN_PIN", err)
        self.assertIn(d["pin"], ("compact", "none"))


class Fallback(unittest.TestCase):
    def test_bad_xml_file_gives_one_warning_and_no_binding(self):
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write("<not a topology>")
            f.flush()
            d, err = info_json("--pin", "compact", env={"HWLOC_XMLFILE": f.name})
        self.assertFalse(d["topology_available"])
        self.assertIn("HWLOC_XMLFILE", d["reason"])
        self.assertEqual(d["binding"], [])
        self.assertFalse(d["binding_applied"])
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("warning", err)

    def test_operators_still_run_unpinned_with_one_warning(self):
        x = np.arange(1, 200001, dtype=np.int64).reshape(2, 100000)
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
            np.save(inp, x)
            r = run("run", "cumsum", inp, out, "--axis", 1, "--schedule",
                    "scan.blocked(block=1000, threads=2, pin=compact)", env={"HWLOC_XMLFILE": "/nonexistent.xml"})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            np.testing.assert_array_equal(np.load(out), np.cumsum(x, axis=1))

    def test_synthetic_run_gives_one_notice(self):
        x = np.arange(1, 200001, dtype=np.int64).reshape(2, 100000)
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
            np.save(inp, x)
            r = run("run", "cumsum", inp, out, "--axis", 1, "--schedule",
                    "scan.blocked(block=1000, threads=2, pin=scatter)", env={"HWLOC_SYNTHETIC": TWO_BY_TWO})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn("not bound", r.stderr)
            np.testing.assert_array_equal(np.load(out), np.cumsum(x, axis=1))


class BadInput(unittest.TestCase):
    def test_bad_pin_and_threads(self):
        # --devices reports on the text form only (the JSON holds topology and binding): refused with --json.
        devices = ("--devices",) if "--devices" in run("info", "--help").stdout else ()
        for args in (("--pin", "tight"), ("--threads", 0), ("--threads", "many"), *([devices] if devices else [])):
            r = run("info", "--json", *args)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(r.stdout, "")
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)

    def test_bad_pin_in_schedule(self):
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
            np.save(inp, np.ones(100, dtype=np.float32))
            r = run("run", "cumsum", inp, out, "--axis", 0, "--schedule",
                    "scan.parallel(threads=2, pin=everywhere)")
            self.assertEqual(r.returncode, 2)
            self.assertIn("must be one of none, compact, scatter, numa", r.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    HETKERN = sys.argv.pop(1)
    unittest.main()
