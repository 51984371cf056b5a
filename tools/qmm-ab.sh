#!/usr/bin/env bash
# Two builds of hetkern's host matmul in turns: each case runs `hetkern bench qlinear-matmul` of
# OLD, then of NEW, ROUNDS times, each against oneDNN 2.6 in its own process, so that a machine
# whose speed drifts (a shared VM) drifts under both alike. Prints one Markdown table: per case
# the median times of both builds and of oneDNN, and the medians (ranges) of each build's time
# over oneDNN's, below 1 where hetkern is faster. B lies within [-64, 63], where oneDNN's AVX2
# kernel cannot saturate, so every level's times are of right results.
#
# usage: tools/qmm-ab.sh OLD_TREE NEW_TREE [CASE...]
#   *_TREE   a built or installed hetkern (TREE/bin/hetkern, its libraries in TREE/lib)
#   CASE     "M,N,K THREADS LEVEL [--packed-b]"; default: issue 26's matmuls (1024^3 and 2048^3
#            plain, 16 and 128 x 4096 x 4096 with B packed once) at 1 thread and every core, at
#            the CPU's best level
#   QMM_AB_ROUNDS    turns per case (default 5)
#   QMM_AB_MIN_TIME  seconds each measurement repeats for, at least 5 times (default 0.3)
#   QMM_AB_OUT       where every record goes, one JSON object a line with "build" added
#                    (default ./qmm-ab.jsonl)
set -euo pipefail
(($# >= 2)) || { echo "usage: tools/qmm-ab.sh OLD_TREE NEW_TREE [CASE...]" >&2; exit 2; }
old=$1 new=$2
shift 2
for tree in "$old" "$new"; do
  [[ -x $tree/bin/hetkern ]] || { echo "qmm-ab.sh: no hetkern program at $tree/bin/hetkern" >&2; exit 2; }
done
out=${QMM_AB_OUT:-./qmm-ab.jsonl}
rounds=${QMM_AB_ROUNDS:-5}
cases=("$@")
if ((${#cases[@]} == 0)); then
  info=$("$new/bin/hetkern" info --json)
  read -r cores isa < <(python3 -c 'import json, sys; i = json.loads(sys.argv[1]); print(i["cores"], i["isa"])' "$info")
  for t in $(printf '%s\n' 1 "$cores" | sort -nu); do
    cases+=("1024,1024,1024 $t $isa" "2048,2048,2048 $t $isa" "16,4096,4096 $t $isa --packed-b"
            "128,4096,4096 $t $isa --packed-b")
  done
fi
# The host alone: on a GPU machine an untuned call may otherwise go to the GPU.
export OMP_TARGET_OFFLOAD=DISABLED
: > "$out"
for c in "${cases[@]}"; do
  read -r shape threads level flag <<< "$c"
  packed=()
  [[ -n $flag ]] && packed=("$flag")
  for ((r = 1; r <= rounds; ++r)); do
    for build in old new; do
      tree=$old
      [[ $build == new ]] && tree=$new
      echo "$build: hetkern bench qlinear-matmul --shape $shape --threads $threads --isa $level ${packed[*]}" >&2
      LD_LIBRARY_PATH="$tree/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tree/bin/hetkern" bench qlinear-matmul \
        --shape "$shape" --threads "$threads" --isa "$level" --b-range -64,63 "${packed[@]}" \
        --min-time "${QMM_AB_MIN_TIME:-0.3}" --min-reps 5 --json |
        python3 -c 'import json, sys; r = json.loads(sys.stdin.read()); r["build"] = sys.argv[1]; print(json.dumps(r))' "$build" >> "$out"
    done
  done
done
python3 - "$out" "$old" "$new" <<'EOF'
import collections, json, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    key = ("x".join(map(str, r["shape"])), r["threads"], r["isa"], "packed" if r["packed_b"] else "plain")
    runs[key + (r["build"],)].append(r)
print(f"\nold: {sys.argv[2]}\nnew: {sys.argv[3]}\n")
print("| shape | threads | level | B | hetkern old / new | oneDNN | old / oneDNN | new / oneDNN |")
print("|---|---|---|---|---|---|---|---|")
for key in dict.fromkeys(k[:4] for k in runs):
    old, new = runs[key + ("old",)], runs[key + ("new",)]
    ms = lambda rs, field: statistics.median(r[field] for r in rs) / 1e6
    if any(r["onednn_median_ns"] is None for r in old + new):
        reason = next(r["onednn_reason"] for r in old + new if r["onednn_median_ns"] is None)
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {ms(old, 'median_ns'):.3f} / {ms(new, 'median_ns'):.3f} ms "
              f"| no oneDNN: {reason} | | |")
        continue
    ratio = lambda rs: (f"{statistics.median(r['time_vs_baseline'] for r in rs):.3f} "
                        f"({min(r['time_vs_baseline'] for r in rs):.2f}-{max(r['time_vs_baseline'] for r in rs):.2f})")
    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {ms(old, 'median_ns'):.3f} / {ms(new, 'median_ns'):.3f} ms "
          f"| {ms(old + new, 'onednn_median_ns'):.3f} ms | {ratio(old)} | {ratio(new)} |")
EOF
