#!/usr/bin/env bash
# Two builds of hetkern's GPU plugin in turns, on a machine with an NVIDIA GPU: the offload
# benches run once with OLD, then with NEW, ROUNDS times, each in its own process under
# OMP_TARGET_OFFLOAD=MANDATORY (unless set otherwise), so that a machine whose speed drifts
# drifts under both alike. The same libhetkern loads either plugin (HETKERN_GPU_PLUGIN), each
# from a folder of its own with the build's launch shim and kernel-cache wrapper beside it, as an
# installed plugin has them. Prints one Markdown table last: per case and implementation the
# median (and range) of each plugin's times, and OLD's median over NEW's (above 1: NEW is faster).
#
# usage: tools/offload-ab.sh OLD_PLUGIN NEW_PLUGIN
#   *_PLUGIN             a libhetkern_gpu.so built for this hetkern version
#   BIN                  folder of the benches, with lib/ beside it (default build/release/bin)
#   OFFLOAD_AB_ROUNDS    turns (default 3)
#   OFFLOAD_AB_SCAN      arguments of hetkern-offload-bench (default "--case chained --case rows
#                        --case columns"; "none": no scans)
#   OFFLOAD_AB_QMM       M N K triples for hetkern-qmm-offload-bench (default "128 4096 4096 4096
#                        4096 4096"; "none": no matmuls)
#   OFFLOAD_AB_OUT       where every record goes, one JSON object a line with "build" added
#                        (default ./offload-ab.jsonl)
#   LIMIT                seconds each bench may run before it is stopped (default 600)
set -euo pipefail
(($# == 2)) || { echo "usage: tools/offload-ab.sh OLD_PLUGIN NEW_PLUGIN" >&2; exit 2; }
BIN=${BIN:-build/release/bin}
lib=$(cd "$BIN/../lib" && pwd)
rounds=${OFFLOAD_AB_ROUNDS:-3}
scan=${OFFLOAD_AB_SCAN:---case chained --case rows --case columns}
qmm=${OFFLOAD_AB_QMM:-128 4096 4096 4096 4096 4096}
out=${OFFLOAD_AB_OUT:-./offload-ab.jsonl}
for plugin in "$1" "$2"; do
  [[ -f $plugin ]] || { echo "offload-ab.sh: no plugin at $plugin" >&2; exit 2; }
done
command -v ptxas > /dev/null || export PATH=/usr/local/cuda/bin:$PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for build in old new; do
  mkdir "$work/$build"
  plugin=$2
  [[ $build == old ]] && plugin=$1
  cp "$plugin" "$work/$build/libhetkern_gpu.so"
  for extra in libhetkern_cuda.so hetkern; do
    [[ -e $lib/$extra ]] && ln -s "$lib/$extra" "$work/$build/$extra"
  done
done
: > "$out"
tag() { python3 -c 'import json, sys
for line in sys.stdin:
    try: r = json.loads(line)
    except ValueError: continue
    r["build"] = sys.argv[1]; print(json.dumps(r))' "$1"; }
# Runs one bench (its arguments) with one build's plugin; a failure stops the comparison with the
# end of the bench's messages.
bench() {
  local build=$1
  local log=$work/$build.log
  shift
  echo "$build: $*" >&2
  if ! HETKERN_GPU_PLUGIN=$work/$build/libhetkern_gpu.so timeout "${LIMIT:-600}" "$@" 2> "$log" | tag "$build" >> "$out"; then
    echo "offload-ab.sh: $* failed with the $build plugin:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
}
export OMP_TARGET_OFFLOAD=${OMP_TARGET_OFFLOAD:-MANDATORY}
for ((r = 1; r <= rounds; ++r)); do
  for build in old new; do
    # shellcheck disable=SC2086  # the options and shapes are separate arguments
    [[ $scan == none ]] || bench "$build" "$BIN/hetkern-offload-bench" $scan
    # shellcheck disable=SC2086
    [[ $qmm == none ]] || bench "$build" "$BIN/hetkern-qmm-offload-bench" $qmm --jsonl
  done
done
python3 - "$out" "$1" "$2" << 'EOF'
import collections, json, statistics, sys
runs = collections.defaultdict(lambda: {"old": [], "new": []})
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs[(r["case"], r["impl"])][r["build"]].append(r["ms"])
def cell(v):
    return f"{statistics.median(v):.4f} ({min(v):.4f}-{max(v):.4f})" if v else "-"
print(f"\nold: {sys.argv[2]}\nnew: {sys.argv[3]}\n")
print("| case | implementation | old ms | new ms | old / new |\n|---|---|---|---|---|")
for (case, impl), t in runs.items():
    old, new = (statistics.median(t[b]) if t[b] else float("nan") for b in ("old", "new"))
    ratio = old / new if new > 0 else float("nan")
    print(f"| {case} | {impl} | {cell(t['old'])} | {cell(t['new'])} | {ratio:.3f} |")
EOF
