#!/usr/bin/python3
"""Report of a hetkern benchmark sweep: results.csv, summary.md and PNG plots from results.json.

usage: plot.py RESULTS.json [--out DIR]      (DIR defaults to the directory of RESULTS.json)

`hetkern bench --sweep` runs it on its own results; it also works standalone on any results.json.
Plots (matplotlib, Debian's python3-matplotlib; without it the CSV and summary are still written):
  scans.png    achieved GB/s per case against the copy roof measured in the same run
  qmm.png      GOPS per shape against oneDNN and the instruction-set peak; a oneDNN point whose
               outputs differed from hetkern's (exact) ones is drawn as a red X marked "wrong"
  scaling.png  speed against host thread count, pinned and not (when the sweep has several counts)
  cpu_gpu.png  time per call against size on the CPU and the GPU, with and without transfers
               (only from GPU records; summary.md says "no GPU records" otherwise)
A plot that cannot be drawn (matplotlib missing or broken) is reported on stderr and in summary.md;
the CSV and the summary are still written.
"""
import argparse
import csv
import json
import math
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def cell(v, key=None):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):  # sizes as 64x256; a range (b_range) as LO,HI
        return ("," if key == "b_range" else "x").join(str(x) for x in v)
    return v if isinstance(v, str) else repr(v)


def write_atomically(path, write):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        write(f)
    os.replace(tmp, path)


def write_csv(records, path):
    columns = []
    for r in records:
        columns += [k for k in r if k not in columns]

    def write(f):
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for r in records:
            w.writerow([cell(r.get(k), k) for k in columns])

    write_atomically(path, write)


def is_scan(r):
    return r["op"] in ("cumsum", "cumprod")


def label(r):
    """A case as the plots name it: op, shape, dtype and the scan's options."""
    shape = "x".join(str(s) for s in r["shape"])
    if not is_scan(r):
        return f"{shape}\n{r['dtype'].replace('uint8', 'u8').replace('int8', 's8')}"
    extra = (" dec" if r.get("direction") == "decreasing" else "") + (" excl" if r.get("exclusive") else "")
    return f"{r['op']} {shape}\n{r['dtype']} axis {r['axis']}{extra}"


def series_name(r):
    name = "default (hetkern's own choice)" if is_default(r) else r["strategy"] if r["kind"] == "hetkern" else r["peer"]
    if r.get("pin"):
        name += f" pin={r['pin']}"
    return name


def is_default(r):
    """The library's own choice: the schedule hetkern runs when none is given."""
    return r["kind"] == "hetkern" and r["strategy"] == "default"


def schedule_cell(r):
    return f"{r['schedule']} **(default)**" if is_default(r) else r["schedule"]


def onednn_wrong(r):
    """oneDNN's outputs differed from hetkern's on this record's data (hetkern's are checked exact)."""
    return bool(r.get("onednn_mismatches"))


def threads_run(r):
    """The threads a host schedule runs: its threads parameter, else one (scan.tiled, qmm.tiled,
    reference). A record's threads is the budget the sweep gave it, which the library's own choice
    may not use whole."""
    for part in r["schedule"].replace("(", ",").replace(")", ",").split(","):
        key, _, value = part.strip().partition("=")
        if key == "threads" and value.isdigit():
            return int(value)
    return 1


def peak_of(res, r):
    """The instruction-set peak at the threads a host record's schedule runs."""
    if r["device"] != "host" or r["kind"] != "hetkern":
        return r.get("peak_gops")
    at = {p["threads"]: p["gops"] for p in res["peaks"]}
    return at.get(threads_run(r), r.get("peak_gops"))


def threads_cell(r):
    """The budget, and the threads the schedule runs where fewer."""
    if not r["threads"]:
        return ""
    t = threads_run(r) if r["device"] == "host" and r["kind"] == "hetkern" else r["threads"]
    return f"{r['threads']} (runs {t})" if t < r["threads"] else str(r["threads"])


def ms(ns):
    return "" if ns is None else f"{ns / 1e6:.3f}"


def num(x, digits=1):
    return "" if x is None else f"{x:.{digits}f}"


def percent(part, whole):
    return f"{100 * part / whole:.0f}%" if whole else ""


def case_order(records):
    order = []
    for r in records:
        if r["case"] not in order:
            order.append(r["case"])
    return order


def top_threads(records):
    host = [r["threads"] for r in records if r["kind"] == "hetkern" and r["device"] == "host"]
    return max(host) if host else 1


# ---------------------------------------------------------------------------------------------
# summary.md

def summary(res, path, plots, plot_note):
    records, m = res["records"], res["machine"]
    scans = [r for r in records if is_scan(r)]
    qmms = [r for r in records if not is_scan(r)]
    gpu = [r for r in records if r["device"] == "gpu"]
    out = ["# hetkern benchmark sweep", ""]
    out.append(f"Spec `{res['spec']}`, hetkern {res['hetkern_version']}, {res['created']}. "
               f"{len(records)} records ({res['planned']} hetkern measurements planned).")
    out.append("")
    out.append(f"Machine: {m['cpu']}, {m['cpus']} CPUs, instruction set `{m['isa']}` (detected "
               f"`{m['detected_isa']}`), clock {m['clock_ghz']:.2f} GHz ({m['clock_method']}), "
               f"{m['gpu_devices']} OpenMP offload device(s), oneDNN {m['onednn_version'] or 'not built in'}.")
    if res["interrupted"]:
        out += ["", "**Interrupted (Ctrl-C): the tables hold the measurements that finished.**"]
    out += ["", "Times are the median per call over the repetitions; the spread is the interquartile "
            "range (q1-q3). Every hetkern measurement ran next to its baseline in the same process: "
            "the copy of the same bytes for the scans, oneDNN for the matrix products. "
            "**(default)** marks the schedule hetkern chooses itself when a call names none."]
    wrong = [r for r in qmms if onednn_wrong(r)]
    if wrong:
        cases = sorted({r["case"] for r in wrong}, key=case_order(records).index)
        out += ["", f"**oneDNN gave wrong results** in {len(cases)} case(s) ({', '.join(cases)}): its "
                "outputs differed from hetkern's exact ones, so its times there are no baseline."]

    out += ["", "## At a glance: the fastest schedule of each case", "",
            "Against its own baseline, measured next to it at its thread count: the copy of the same "
            "bytes for a scan (*of limit*: share of copy speed), the instruction-set peak for a matrix "
            "product (*of limit*: share of the peak at the threads the schedule runs; *baseline* is "
            "oneDNN). *threads* is the budget the sweep gave, with the threads the schedule runs where "
            "fewer (the library may choose a one-thread schedule for a small case).", "",
            "| case | fastest hetkern schedule | threads | median ms | rate | baseline rate | of limit | fastest peer |",
            "|---|---|---:|---:|---:|---:|---:|---|"]
    for case in case_order(records):
        group = [r for r in records if r["case"] == case]
        ours = [r for r in group if r["kind"] == "hetkern"]
        peers = [r for r in group if r["kind"] == "peer"]
        peer = min(peers, key=lambda r: r["median_ns"]) if peers else None
        peer_text = f"{peer['schedule']}: {ms(peer['median_ns'])} ms" if peer else ""
        if not ours:
            out.append(f"| {case} | | | | | | | {peer_text} |")
            continue
        best = min(ours, key=lambda r: r["median_ns"])
        if is_scan(best):
            rate, limit = f"{num(best['gbps'])} GB/s", best.get("copy_gbps")
            value, base_text = best["gbps"], num(best.get("copy_gbps"))
            base_text += " GB/s" if base_text else ""
        else:
            rate, base, limit = f"{num(best['gops'])} GOPS", best.get("onednn_gops"), peak_of(res, best)
            value, base_text = best["gops"], num(base)
            base_text += (" GOPS" if base_text else "") + (" (wrong results)" if onednn_wrong(best) else "")
        out.append(f"| {case} | {schedule_cell(best)} | {threads_cell(best)} | {ms(best['median_ns'])} | {rate} | "
                   f"{base_text} | {percent(value, limit)} | {peer_text} |")

    if scans:
        out += ["", "## Scans: achieved bandwidth against the copy roof", "",
                "GB/s counts the tensor read once and written once. *of roof* is the copy's time over "
                "the schedule's: 100% is copy speed.", "",
                "| case | schedule | device | threads | pin | median ms | q1-q3 ms | GB/s | copy GB/s | of roof |",
                "|---|---|---|---:|---|---:|---:|---:|---:|---:|"]
        for r in scans:
            roof = r.get("copy_gbps")
            out.append(f"| {r['case']} | {schedule_cell(r)} | {r['device']} | {threads_cell(r)} | "
                       f"{r.get('pin') or ''} | {ms(r['median_ns'])} | {ms(r['q1_ns'])}-{ms(r['q3_ns'])} | "
                       f"{num(r['gbps'])} | {num(roof)} | "
                       f"{percent(r['gbps'], roof)} |")
    if qmms:
        peaks = ", ".join(f"{p['threads']} thread(s): {num(p['gops'], 0) or 'none'} GOPS"
                          for p in res["peaks"])
        method = res["peaks"][0]["method"] if res["peaks"] else ""
        out += ["", "## Quantized matrix multiplication: GOPS against oneDNN and the peak", "",
                f"GOPS = 2·M·N·K per second. Instruction-set peak ({method}): {peaks}. "
                "*vs oneDNN* is oneDNN's time over hetkern's (above 1: hetkern is faster); it is "
                "only meaningful where oneDNN's mismatches are 0.", "",
                "| case | schedule | device | threads | median ms | q1-q3 ms | GOPS | oneDNN GOPS | "
                "vs oneDNN | oneDNN mismatches | of peak |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in qmms:
            peak = peak_of(res, r)
            vs = r.get("time_vs_baseline")
            vs_text = "wrong results" if onednn_wrong(r) else num(1 / vs, 2) if vs else ""
            out.append(f"| {r['case']} | {schedule_cell(r)} | {r['device']} | {threads_cell(r)} | "
                       f"{ms(r['median_ns'])} | {ms(r['q1_ns'])}-{ms(r['q3_ns'])} | {num(r['gops'])} | "
                       f"{num(r.get('onednn_gops'))} | {vs_text} | "
                       f"{'' if r.get('onednn_mismatches') is None else r['onednn_mismatches']} | "
                       f"{percent(r['gops'], peak)} |")

    out += ["", "## Peers", "", "| peer | available | version | note |", "|---|---|---|---|"]
    for p in res["peers"]:
        out.append(f"| {p['name']} | {'yes' if p['available'] else 'no'} | {p['version'] or ''} | "
                   f"{p['reason'] or ''} |")
    if not res["peers"]:
        out.append("| (none run) | | | |")

    out += ["", "## CPU against GPU", ""]
    if gpu:
        out += ["| case | schedule | median ms | without transfers ms | with transfers ms |", "|---|---|---:|---:|---:|"]
        for r in gpu:
            out.append(f"| {r['case']} | {schedule_cell(r)} | {ms(r['median_ns'])} | "
                       f"{ms(r.get('median_without_transfers_ns'))} | {ms(r.get('median_with_transfers_ns'))} |")
    else:
        out.append("No GPU records: no OpenMP offload device and no CUDA peer in this run, so no "
                   "CPU-against-GPU plot.")

    if res["notes"] or res["skipped"]:
        out += ["", "## Not measured", ""]
        out += [f"- {n}" for n in res["notes"]]
        out += [f"- {s['case']} | {s['schedule']}: {s['reason']}" for s in res["skipped"]]

    out += ["", "## Plots", ""]
    if plot_note:
        out.append(plot_note)
    for name, what in plots:
        out += [f"![{what}]({name})", ""]
    write_atomically(path, lambda f: f.write("\n".join(out).rstrip() + "\n"))


# ---------------------------------------------------------------------------------------------
# plots

def setup_axes(ax, cases, records):
    labels = [label(next(r for r in records if r["case"] == c)) for c in cases]
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)


def plot_scans(plt, res, path):
    records = [r for r in res["records"] if is_scan(r)]
    cases = case_order(records)
    top = top_threads(records)
    fig, ax = plt.subplots(figsize=(max(10, 1.1 * len(cases) + 6), 5))
    x_of = {c: i for i, c in enumerate(cases)}
    # The roof at each thread count a plotted line ran with: a copy of the same bytes, same run.
    shown = [r for r in records if r["device"] == "host" and (r["threads"] in (top, 1) or r["kind"] == "peer")
             and (r["kind"] == "peer" or r["threads"] == top or r["strategy"] in single_thread(records))]
    for t in sorted({r["threads"] for r in shown if r.get("copy_gbps")}, reverse=True):
        roof = best_by(records, "copy_gbps", lambda r: r["case"] if r["threads"] == t else None)
        xs = [x_of[c] for c in cases if c in roof]
        ax.plot(xs, [roof[c] for c in cases if c in roof], color="black", linewidth=3 if t == top else 1.5,
                linestyle="-" if t == top else "--", alpha=0.35,
                label=f"copy roof, {t} thread{'s' if t > 1 else ''}\n(fastest copy of the same bytes)", zorder=1)
    for name, group in groups(shown):
        t = group[0]["threads"]
        pts = sorted((x_of[r["case"]], r["gbps"]) for r in group)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", linewidth=1.2,
                label=f"{name}, {t} thread{'s' if t > 1 else ''}", zorder=2)
    setup_axes(ax, cases, records)
    ax.set_ylabel("achieved bandwidth (GB/s, read + write)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"Scans against the copy roof of the same run ({res['machine']['cpu']}, {top} threads)",
                 fontsize=10)
    outside_legend(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def best_by(records, key, group_of):
    """The highest value of `key` per group (None: left out). Every hetkern measurement timed its
    own baseline; the roof drawn is the fastest of them, the best this run saw the machine do."""
    best = {}
    for r in records:
        g = group_of(r)
        if g is not None and r.get(key):
            best[g] = max(best.get(g, 0), r[key])
    return best


def outside_legend(ax):
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)


def single_thread(records):
    """Strategies measured at one thread only (no threads parameter): plotted at 1 thread."""
    threads = {}
    for r in records:
        if r["kind"] == "hetkern":
            threads.setdefault(r["strategy"], set()).add(r["threads"])
    return {s for s, t in threads.items() if t == {1}}


def groups(records):
    out = {}
    for r in records:
        out.setdefault(series_name(r) + (" (GPU)" if r["device"] == "gpu" else ""), []).append(r)
    return sorted(out.items())


def plot_qmm(plt, res, path):
    records = [r for r in res["records"] if not is_scan(r)]
    cases = case_order(records)
    top = top_threads(records)
    x_of = {c: i for i, c in enumerate(cases)}
    fig, ax = plt.subplots(figsize=(max(10, 1.1 * len(cases) + 6), 5))
    peak = {p["threads"]: p for p in res["peaks"]}
    shown = [r for r in records if r["kind"] == "peer" or r["threads"] == top
             or r["strategy"] in single_thread(records)]
    # The peak at each host thread count a plotted line ran with.
    for t in sorted({r["threads"] for r in shown if r["kind"] == "hetkern"}, reverse=True):
        if t in peak and peak[t]["gops"]:
            p = peak[t]
            ax.axhline(p["gops"], color="black", linewidth=3 if t == top else 1.5, alpha=0.35,
                       linestyle="-" if t == top else "--",
                       label=f"{p['isa']} instruction-set peak, {t} thread{'s' if t > 1 else ''}\n"
                             f"({p['method'].split(' of one core')[0]})")
    at_top = [r for r in records if r["kind"] == "hetkern" and r["threads"] == top]
    onednn = best_by(at_top, "onednn_gops", lambda r: r["case"])
    if onednn:
        xs = [x_of[c] for c in cases if c in onednn]
        ax.plot(xs, [onednn[c] for c in cases if c in onednn], color="gray", linestyle="--", marker="s",
                label=f"oneDNN {res['machine']['onednn_version']} int8 matmul, {top} threads")
        # A time is no baseline when the outputs were wrong: such points say so on the plot itself.
        wrong = {}
        for r in at_top:
            if onednn_wrong(r) and r["case"] in onednn:
                wrong[r["case"]] = max(wrong.get(r["case"], 0), r["onednn_mismatches"])
        if wrong:
            ax.plot([x_of[c] for c in wrong], [onednn[c] for c in wrong], linestyle="none", marker="X",
                    markersize=14, color="red", zorder=5, label="oneDNN WRONG: outputs differ from the exact result")
            for c, count in wrong.items():
                ax.annotate(f"oneDNN wrong\n{count} outputs differ", (x_of[c], onednn[c]), textcoords="offset points",
                            xytext=(0, 12), ha="center", fontsize=7, color="red", fontweight="bold")
    for name, group in groups(shown):
        t = group[0]["threads"]
        pts = sorted((x_of[r["case"]], r["gops"]) for r in group)
        where = "" if t is None else f", {t} thread{'s' if t > 1 else ''}"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{name}{where}")
    setup_axes(ax, cases, records)
    ax.set_ylabel("GOPS (2·M·N·K per second, 10^9/s)")
    ax.set_xlabel("M x N x K, types of A, B, output")
    ax.set_ylim(bottom=0)
    title = f"Quantized matmul against oneDNN and the instruction-set peak ({top} threads)"
    if any(onednn_wrong(r) for r in at_top):
        title += "\noneDNN gave wrong results where marked X: those times are no baseline"
    ax.set_title(title, fontsize=10, color="black")
    outside_legend(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_scaling(plt, res, path):
    records = [r for r in res["records"] if r["kind"] == "hetkern" and r["device"] == "host"]
    cases = case_order(records)
    cols = min(3, len(cases))
    rows = math.ceil(len(cases) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, case in zip(axes.flat, cases):
        group = [r for r in records if r["case"] == case]
        rate, unit = ("gbps", "GB/s") if is_scan(group[0]) else ("gops", "GOPS")
        for name, g in groups(group):
            pts = sorted((r["threads"], r[rate]) for r in g)
            if len(pts) > 1:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        if is_scan(group[0]):
            roof = sorted(best_by(group, "copy_gbps", lambda r: r["threads"]).items())
            ax.plot([p[0] for p in roof], [p[1] for p in roof], color="black", alpha=0.35, linewidth=3,
                    label="copy roof")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({r["threads"] for r in group}))
        ax.get_xaxis().set_major_formatter(plt.matplotlib.ticker.ScalarFormatter())
        ax.set_title(label(group[0]).replace("\n", " "), fontsize=8)
        ax.set_xlabel("threads")
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(cases):]:
        ax.set_visible(False)
    fig.suptitle("Scaling with host threads (pin=P lines: pinned; others: the OpenMP default)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def size_of(r):
    if is_scan(r):
        return r["bytes"], "tensor bytes"
    return r["ops"], "operations (2·M·N·K)"


def plot_cpu_gpu(plt, res, path):
    records = res["records"]
    families = []
    for r in records:
        f = (r["op"], r["dtype"] if is_scan(r) else "qmm")
        if any(g["device"] == "gpu" and (g["op"], g["dtype"] if is_scan(g) else "qmm") == f for g in records) \
                and f not in families:
            families.append(f)
    fig, axes = plt.subplots(1, len(families), figsize=(6 * len(families), 4.5), squeeze=False)
    for ax, fam in zip(axes.flat, families):
        group = [r for r in records if (r["op"], r["dtype"] if is_scan(r) else "qmm") == fam]
        best = {}
        for r in group:
            if r["device"] == "host" and r["kind"] == "hetkern":
                s = size_of(r)[0]
                best[s] = min(best.get(s, math.inf), r["median_ns"])
        xs = sorted(best)
        ax.plot(xs, [best[x] / 1e6 for x in xs], marker="o", color="black", label="CPU: fastest hetkern schedule")
        for name, g in groups([r for r in group if r["device"] == "gpu"]):
            for key, style, what in (("median_without_transfers_ns", "-", "without transfers"),
                                     ("median_with_transfers_ns", "--", "with transfers")):
                pts = sorted((size_of(r)[0], r[key]) for r in g if r.get(key))
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] / 1e6 for p in pts], marker="^", linestyle=style,
                            label=f"GPU {name}, {what}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"size ({size_of(group[0])[1]})")
        ax.set_ylabel("time per call (ms)")
        ax.set_title(f"{fam[0]} {fam[1] if fam[1] != 'qmm' else ''}: CPU against GPU", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Where the GPU wins: the crossover is where a GPU line drops below the CPU's", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="results.json of `hetkern bench --sweep`")
    parser.add_argument("--out", help="directory for results.csv, summary.md and the PNGs "
                                      "(default: the directory of RESULTS)")
    args = parser.parse_args()
    out = args.out or os.path.dirname(os.path.abspath(args.results))
    os.makedirs(out, exist_ok=True)
    try:
        res = load(args.results)
    except (OSError, ValueError) as e:
        sys.exit(f"plot.py: {args.results}: {e}")
    records = res["records"]
    write_csv(records, os.path.join(out, "results.csv"))
    plots, note = [], ""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
        note = "No plots: matplotlib is not installed (Debian: python3-matplotlib)."
        print(f"plot.py: {note}", file=sys.stderr)
    except Exception as e:  # a broken installation, whatever it raises, only costs the plots
        plt = None
        note = f"No plots: matplotlib failed to load ({type(e).__name__}: {e})."
        print(f"plot.py: {note}", file=sys.stderr)
    if plt is not None:
        host = [r for r in records if r["kind"] == "hetkern" and r["device"] == "host"]
        wanted = [("scans.png", "scans against the copy roof", any(is_scan(r) for r in records), plot_scans),
                  ("qmm.png", "quantized matmul against oneDNN and the peak",
                   any(not is_scan(r) for r in records), plot_qmm),
                  ("scaling.png", "scaling with threads", len({r["threads"] for r in host}) > 1, plot_scaling),
                  ("cpu_gpu.png", "CPU against GPU", any(r["device"] == "gpu" for r in records), plot_cpu_gpu)]
        failed = []
        for name, what, present, draw in wanted:
            if not present:
                continue
            try:
                draw(plt, res, os.path.join(out, name))
                plots.append((name, what))
            except Exception as e:  # matplotlib's own failure: the other plots and the report go on
                plt.close("all")
                failed.append(f"{name} ({type(e).__name__}: {e})")
                print(f"plot.py: {name} not drawn: {type(e).__name__}: {e}", file=sys.stderr)
        if failed:
            note = "Not drawn: " + "; ".join(failed) + "."
    summary(res, os.path.join(out, "summary.md"), plots, note)


if __name__ == "__main__":
    main()
