#!/usr/bin/env bash
# The CPU table of issue 26 for one machine, from a prebuilt hetkern: the scans against a copy of
# the same bytes measured in the same process, the int8 matmuls against oneDNN 2.6 (hetkern's
# baseline, capped at the same instruction-set level) and against PyTorch's torch._int_mm on the CPU
# (its oneDNN 3.x capped alike, then hetkern's requantization to uint8), at 1 thread, 16 threads and
# every core, the matmuls at each of amx, avx512_vnni and avx2 that the CPU has. Prints one
# Markdown table at the end; ratios are hetkern's median time over the other's, below 1 where
# hetkern is faster, and beside them the ratio of the two fastest calls (which machines whose
# speed moves in stretches leave steadier than the medians).
#
# usage: tools/cpu-report.sh TREE [OUT.jsonl]
#   TREE       a built or installed hetkern (TREE/bin/hetkern; its libraries found by the loader)
#   OUT.jsonl  every record, one JSON object a line (default ./cpu-report.jsonl): hetkern bench
#              --json's, then PyTorch's from bench/peers.py ("kind": "peer"), its availability
#              ("available") and what it skipped ("reason")
#   CPU_REPORT_THREADS   thread counts (default "1 16 N", N the cores; counts above N dropped)
#   CPU_REPORT_ISAS      matmul levels (default "amx avx512_vnni avx2"; levels the CPU lacks are skipped)
#   CPU_REPORT_MIN_TIME  seconds each measurement repeats for, at least 5 times (default 0.2, chosen
#                        to keep the whole report under 6 minutes on a 32-core Xeon)
#   HETKERN_PYTHON       the Python with PyTorch (default python3)
set -euo pipefail

(($# == 1 || $# == 2)) || { echo "usage: tools/cpu-report.sh TREE [OUT.jsonl]" >&2; exit 2; }
tree=$1
out=${2:-./cpu-report.jsonl}
hetkern=$tree/bin/hetkern
python=${HETKERN_PYTHON:-python3}
timing=(--min-time "${CPU_REPORT_MIN_TIME:-0.2}" --min-reps 5)
[[ -x $hetkern ]] || { echo "cpu-report.sh: no hetkern program at $hetkern" >&2; exit 2; }
command -v "$python" >/dev/null || { echo "cpu-report.sh: no $python for the table" >&2; exit 2; }
# bench/peers.py of this script's checkout, which matches it, else the tree's (share/hetkern/bench).
peers=$(dirname "$0")/../bench/peers.py
[[ -f $peers ]] || peers=$tree/share/hetkern/bench/peers.py

info=$("$hetkern" info --json)
field() { "$python" -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$info" "$1"; }
cores=$(field cores)
detected=$(field isa)
threads=${CPU_REPORT_THREADS:-$(printf '%s\n' 1 16 "$cores" | awk -v n="$cores" '$1 <= n' | sort -nu)}
levels=(portable avx2 avx512 avx512_vnni amx)  # hetkern's --isa levels, lowest first
rank() { local i; for i in "${!levels[@]}"; do [[ ${levels[i]} == "$1" ]] && { echo "$i"; return; }; done; echo -1; }
isas=() not_run=()
for isa in ${CPU_REPORT_ISAS:-amx avx512_vnni avx2}; do
  (($(rank "$isa") >= 0)) || { echo "cpu-report.sh: unknown level $isa (levels: ${levels[*]})" >&2; exit 2; }
  if (($(rank "$isa") <= $(rank "$detected"))); then isas+=("$isa"); else not_run+=("$isa"); fi
done

# The host alone: on a GPU machine an untuned call may otherwise go to the GPU.
export OMP_TARGET_OFFLOAD=DISABLED
: > "$out"
failed=()
# Runs one `hetkern bench` and appends its record; a case that fails is listed, the rest still run.
bench() {
  echo "hetkern bench $*" >&2
  local record status=0
  record=$("$hetkern" bench "$@" "${timing[@]}" --json) || status=$?
  # A crash prints nothing of its own here: the exit status (128 + the signal) says what happened.
  if ((status == 0)); then echo "$record" >> "$out"; else failed+=("$* (exit status $status)"); fi
}

scans=("cumsum float32 67108864 0" "cumsum float32 4096,16384 1" "cumsum float32 4096,16384 0"
       "cumsum int32 67108864 0" "cumprod float32 4096,16384 1" "cumsum float16 4096,16384 0"
       "cumsum float16 4096,16384 1" "cumsum float64 4096,16384 1" "cumsum float64 4096,16384 0")
for scan in "${scans[@]}"; do
  read -r op dtype shape axis <<< "$scan"
  for t in $threads; do bench "$op" --shape "$shape" --dtype "$dtype" --axis "$axis" --threads "$t"; done
done
# M,N,K and whether B is packed once (constant weights); B within [-64, 63], where oneDNN's AVX2
# kernel cannot saturate, so every level's times are of right results.
matmuls=("1024,1024,1024 plain" "2048,2048,2048 plain" "16,4096,4096 packed" "128,4096,4096 packed")
for matmul in "${matmuls[@]}"; do
  read -r shape b <<< "$matmul"
  packed=()
  [[ $b == packed ]] && packed=(--packed-b)
  for isa in "${isas[@]}"; do
    for t in $threads; do bench qlinear-matmul --shape "$shape" --b-range -64,63 --isa "$isa" --threads "$t" "${packed[@]}"; done
  done
done

# torch._int_mm on the same matmuls, one process per level: PyTorch's oneDNN takes its cap from
# ONEDNN_MAX_CPU_ISA when it starts. No CUDA device is made visible, so only the CPU is measured.
declare -A onednn_cap=([amx]=AVX512_CORE_AMX [avx512_vnni]=AVX512_CORE_VNNI [avx512]=AVX512_CORE [avx2]=AVX2 [portable]=SSE41)
if [[ ! -f $peers ]]; then
  echo "no bench/peers.py next to this script or in $tree/share/hetkern/bench: no torch._int_mm" >&2
else
  for isa in "${isas[@]}"; do
    echo "torch._int_mm at $isa" >&2
    request=$("$python" - "$out" "$isa" "${timing[1]}" "${timing[3]}" <<'EOF'
# The request of bench/peers.py: each matmul measured at this level, with the quantization of its
# record and the thread counts it ran at; "case" names the shape, B and the level for the table.
import json, sys
path, isa, min_seconds, min_repetitions = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
cases = {}
for line in open(path):
    r = json.loads(line)
    if r.get("op") == "qlinear-matmul" and r.get("kind") is None and r["isa"] == isa:
        name = f"qlinear-matmul {'x'.join(map(str, r['shape']))}{' packed B' if r['packed_b'] else ''} {isa}"
        case = cases.setdefault(name, dict(r, case=name, case_line=0, threads=[]))
        case["threads"].append(r["threads"])
json.dump({"min_seconds": min_seconds, "min_repetitions": min_repetitions, "cases": list(cases.values())}, sys.stdout)
EOF
)
    ONEDNN_MAX_CPU_ISA=${onednn_cap[$isa]} CUDA_VISIBLE_DEVICES="" "$python" "$peers" <<< "$request" |
      sed -n 's/^\(peer\|record\|skip\) //p' >> "$out" || failed+=("torch._int_mm at $isa")
  done
fi

"$python" - "$out" "$peers" <<'EOF'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
hetkern = [r for r in records if "op" in r and r.get("kind") is None]
torch = {(r["case"], r["threads"]): r for r in records if r.get("kind") == "peer"}
status = next((r for r in records if r.get("name") == "torch"), None)
skips = {r["case"]: r["reason"] for r in records if "reason" in r and "schedule" in r}


def ratio(ours, theirs):
    return f"{ours / theirs:.2f}" if ours and theirs else ""


print("\n| case | threads | isa | vs copy / oneDNN 2.6 | the same by minima | vs torch._int_mm |\n"
      "|---|---:|---|---:|---:|---:|")
for r in hetkern:
    shape = ",".join(map(str, r["shape"]))
    if r["op"] == "qlinear-matmul":
        name = f"qlinear-matmul {'x'.join(map(str, r['shape']))}{' packed B' if r['packed_b'] else ''}"
        base = ratio(r["median_ns"], r["onednn_median_ns"]) or f"no oneDNN: {r['onednn_reason']}"
        by_minima = ratio(r["min_ns"], r.get("onednn_min_ns"))
        if r["onednn_mismatches"]:
            base += f" ({r['onednn_mismatches']} outputs wrong)"
        peer = torch.get((f"{name} {r['isa']}", r["threads"]))
        vs_torch = ratio(r["median_ns"], peer["median_ns"]) if peer else skips.get(f"{name} {r['isa']}", "")
    else:
        name = f"{r['op']} {r['dtype']} {{{shape}}} axis {r['axis']}"
        base, vs_torch = ratio(r["median_ns"], r["copy_median_ns"]), ""
        by_minima = ratio(r["min_ns"], r["copy_min_ns"])
    print(f"| {name} | {r['threads']} | {r['isa']} | {base} | {by_minima} | {vs_torch} |")
onednn = next((r for r in hetkern if r.get("onednn_version")), None)
print(f"\nhetkern time over the copy's (scans) or oneDNN {onednn['onednn_version'] if onednn else '(none)'}'s "
      "and torch._int_mm's (matmuls, B in [-64, 63], u8 x s8 -> u8, both capped at the row's level): "
      "below 1, hetkern is faster. torch._int_mm has no packed B: packed-B rows compare with its plain call.")
if status:
    print(f"torch {status['version']}" if status["available"] else f"torch unavailable: {status['reason']}",
          f"(through {sys.argv[2]})")
EOF
((${#not_run[@]} == 0)) || echo "not run: ${not_run[*]} (this CPU's highest level is $detected)"
if ((${#failed[@]})); then
  printf 'failed: %s\n' "${failed[@]}"
  exit 1
fi
