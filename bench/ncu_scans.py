#!/usr/bin/env python3
"""Nsight Compute counters of hetkern's GPU scan kernels on device tensors, a line per kernel.

usage: ncu_scans.py [--ncu PATH] [--out DIR] [TYPE:SHAPE:AXIS ...]
  default cases: the GPU report's, {16384,16384} along axes 1 and 0 and one line of 2^28, each in
  float32, int32 and float16 (e.g. float16:16384,16384:0)
  --out  keeps each case's CSV there (default: a temporary folder)

Each case runs in a process of its own under `ncu --clock-control none --profile-from-start off`:
hetkern.cumsum on CUDA tensors twice, then once between cudaProfilerStart and cudaProfilerStop, so
that only that call's kernels are counted (Nsight Compute does not count torch's copy_, a memcpy, so
the CUDA copy has no line). The first case runs once without ncu before any is profiled: that
fills the GPU kernel cache where it is empty (up to a minute), since under ncu every process that
compiles the kernels takes minutes. Needs PyTorch with CUDA and hetkern importable.
"""
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile

CASES = [f"{t}:{shape}:{axis}" for shape, axis in (("16384,16384", 1), ("16384,16384", 0), ("268435456", 0))
         for t in ("float32", "int32", "float16")]
SECTIONS = ["SpeedOfLight", "LaunchStats", "Occupancy", "SchedulerStats", "WarpStateStats", "InstructionStats"]
STALLS = ["long_scoreboard", "short_scoreboard", "wait", "barrier", "math_pipe_throttle", "mio_throttle",
          "lg_throttle", "not_selected", "selected", "dispatch_stall", "no_instruction", "drain", "membar",
          "branch_resolving", "sleeping"]
COLUMNS = [("Duration", "us"), ("DRAM Throughput", "DRAM %"), ("L2 Cache Throughput", "L2 %"),
           ("Compute (SM) Throughput", "SM %"), ("Issued Instructions", "warp instructions"),
           ("Issued Warp Per Scheduler", "issued a cycle"), ("Eligible Warps Per Scheduler", "eligible warps"),
           ("Achieved Occupancy", "occupancy %"), ("Registers Per Thread", "registers")]


def run_case(case):
    """The profiled process: one case's calls."""
    import torch
    import hetkern
    type_name, shape_text, axis_text = case.split(":")
    dtype = getattr(torch, type_name)
    shape = tuple(int(s) for s in shape_text.split(","))
    if dtype.is_floating_point:
        x = torch.rand(shape, device="cuda").to(dtype)
    else:
        x = torch.randint(-9, 9, shape, device="cuda", dtype=dtype)
    y = torch.empty_like(x)
    for _ in range(2):
        hetkern.cumsum(x, int(axis_text), out=y)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    hetkern.cumsum(x, int(axis_text), out=y)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def kernel_name(mangled):
    """The kernel's function in hetkern's anonymous namespace and its source line, e.g. rows:38."""
    m = re.search(r"_GLOBAL__N_1(\d+)", mangled)
    name = mangled[m.end():m.end() + int(m.group(1))] if m else mangled[-40:]
    line = re.search(r"_l(\d+)$", mangled)
    return name + (":" + line.group(1) if line else "")


def table(path, case):
    """Lines of the table from one case's `ncu --csv --page details` output."""
    with open(path) as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return [f"| {case} | no kernel profiled ({path}) |"]
    kernels = {}
    for r in csv.DictReader(lines[start:]):
        launch = f'{r["Grid Size"]} x {r["Block Size"]}'.replace(", 1, 1)", "").replace("(", "")
        k = kernels.setdefault(r["ID"], {"name": r["Kernel Name"], "launch": launch})
        k[r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
    out = []
    for k in kernels.values():
        cells = [case, kernel_name(k["name"]), k["launch"]]
        for metric, _ in COLUMNS:
            value, unit = k.get(metric, ("-", ""))
            if metric == "Duration" and value != "-":
                scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "nsecond": 1e-3, "ms": 1e3, "msecond": 1e3}.get(unit, 1.0)
                value = f"{float(value.replace(',', '')) * scale:.1f}"
            cells.append(value)
        stalls = []
        for reason in STALLS:
            v = k.get(f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio")
            if v:
                stalls.append((float(v[0].replace(",", "")), reason))
        stalls.sort(reverse=True)
        cells.append(", ".join(f"{r.replace('_', ' ')} {v:.2f}" for v, r in stalls[:4]))
        out.append("| " + " | ".join(cells) + " |")
    return out


def profile(ncu, out_dir, cases, script):
    """Each case in a process of its own (`script --run-case CASE`) under ncu; the table's lines."""
    metrics = ",".join(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALLS)
    filled = subprocess.run([sys.executable, os.path.abspath(script), "--run-case", cases[0]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if filled.returncode != 0:
        print(f"{os.path.basename(script)}: {cases[0]} without ncu exited {filled.returncode}: "
              f"{filled.stderr.strip()[-500:]}", file=sys.stderr)
    rows = []
    for case in cases:
        path = os.path.join(out_dir, case.replace(":", "_").replace(",", "x") + ".csv")
        command = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "details",
                   "--metrics", metrics]
        for s in SECTIONS:
            command += ["--section", s]
        command += [sys.executable, os.path.abspath(script), "--run-case", case]
        with open(path, "w") as f:
            done = subprocess.run(command, stdout=f, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            print(f"{os.path.basename(script)}: {case}: ncu exited {done.returncode}: {done.stderr.strip()[-500:]}",
                  file=sys.stderr)
        rows += table(path, case)
    return rows


def print_table(rows):
    print("| case | kernel | grid x block | " + " | ".join(name for _, name in COLUMNS) + " | top stalls (cycles per issued instruction) |")
    print("|" + "---|" * (len(COLUMNS) + 4))
    print("\n".join(rows))


def parse_arguments(argv, name, case_pattern, case_help):
    """--ncu, --out and the cases; None after printing why when they are wrong."""
    ncu, out_dir, cases = shutil.which("ncu") or "/usr/local/cuda/bin/ncu", None, []
    it = iter(argv)
    for a in it:
        if a in ("--ncu", "--out"):
            value = next(it, None)
            if value is None:
                print(f"{name}: {a} needs a value", file=sys.stderr)
                return None
            if a == "--ncu":
                ncu = value
            else:
                out_dir = value
        elif re.fullmatch(case_pattern, a):
            cases.append(a)
        else:
            print(f"{name}: '{a}' is no case ({case_help})", file=sys.stderr)
            return None
    if not os.path.exists(ncu):
        print(f"{name}: no Nsight Compute at {ncu} (--ncu PATH)", file=sys.stderr)
        return None
    out_dir = out_dir or tempfile.mkdtemp(prefix="hetkern-ncu-")
    os.makedirs(out_dir, exist_ok=True)
    return ncu, out_dir, cases


def command(argv, script, doc, run_case, default_cases, case_pattern, case_help):
    """A profiling script's command line: --run-case in the profiled process, else the table."""
    if argv[:1] == ["--run-case"]:
        run_case(argv[1])
        return 0
    if any(a in ("-h", "--help") for a in argv):
        print(doc)
        return 0
    parsed = parse_arguments(argv, os.path.basename(script), case_pattern, case_help)
    if parsed is None:
        return 2
    ncu, out_dir, cases = parsed
    print_table(profile(ncu, out_dir, cases or default_cases, script))
    return 0


if __name__ == "__main__":
    sys.exit(command(sys.argv[1:], __file__, __doc__, run_case, CASES, r"[a-z]+\d+:\d+(,\d+)*:-?\d+",
                     "TYPE:SHAPE:AXIS, e.g. float16:16384,16384:0"))
