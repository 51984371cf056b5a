#!/usr/bin/env python3
"""The offload benchmark table from JSON records (hetkern-offload-bench, offload_torch.py and any
other producer of the same fields: group, case, impl, role, ms, rate, unit, check).

Per case, every record with its rate and its ratio to the best record of each reference role
present in that case: "copy" (the OpenMP copy canary, built like hetkern), "cuda copy" and
"peer" (PyTorch). Roles are free text, so a new operator brings its own references.

usage: offload_report.py FILE.jsonl...
"""
import json
import sys

REFERENCES = ["copy", "cuda copy", "peer"]


def main(paths):
    records = []
    for path in paths:
        with open(path) as f:
            records += [json.loads(line) for line in f if line.startswith("{")]
    cases = {}
    for r in records:
        cases.setdefault((r["group"], r["case"]), []).append(r)
    for (group, case), rows in cases.items():
        best = {}
        for role in REFERENCES:
            rates = [r["rate"] for r in rows if r["role"] == role and r["rate"] > 0]
            if rates:
                best[role] = max(rates)
        print(f"\n== {case}")
        head = f"  {'implementation':58} {'ms':>10} {'rate':>10}"
        head += "".join(f" {'x ' + role:>11}" for role in best) + "  check"
        print(head)
        for r in rows:
            rate = f"{r['rate']:.0f} {r['unit']}" if r["rate"] > 0 else "-"
            line = f"  {r['impl'][:58]:58} {r['ms']:10.4f} {rate:>10}"
            line += "".join(f" {r['rate'] / b:11.2f}" if r["rate"] > 0 else f" {'-':>11}" for b in best.values())
            print(line + "  " + r.get("check", ""))


if __name__ == "__main__":
    main(sys.argv[1:])
