#!/usr/bin/env bash
# What limits the all-core int8 matmul (issue 26, goal 3): a one-thread matmul on core 0 (the
# first core this process may use), alone and beside busy neighbours on every other core, at each
# matrix level of the CPU, then all cores at once. Each neighbour is a one-thread `hetkern bench`
# of the same level pinned to its core, either
#   in cache  256^3 (its operands stay in its own L2: it draws power, not memory bandwidth), or
#   the same  the measured shape (power and memory alike).
# A loss beside in-cache neighbours is the shared clock; a further loss beside the same shape is
# memory. oneDNN, which `hetkern bench` times in the same process, is reported alike. The clock is
# what /proc/cpuinfo says of core 0 halfway through (under a hypervisor it may be static).
#
# usage: tools/cpu-scaling.sh TREE [M,N,K]
#   TREE    a built or installed hetkern (TREE/bin/hetkern); M,N,K default 2048,2048,2048
#   CPU_SCALING_ISAS       levels (default "amx avx512_vnni"; levels the CPU lacks are skipped)
#   CPU_SCALING_MIN_TIME   seconds each measurement repeats for (default 1)
set -euo pipefail

(($# == 1 || $# == 2)) || { echo "usage: tools/cpu-scaling.sh TREE [M,N,K]" >&2; exit 2; }
hetkern=$1/bin/hetkern
shape=${2:-2048,2048,2048}
min_time=${CPU_SCALING_MIN_TIME:-1}
[[ -x $hetkern ]] || { echo "cpu-scaling.sh: no hetkern program at $hetkern" >&2; exit 2; }
command -v taskset >/dev/null || { echo "cpu-scaling.sh: needs taskset (util-linux)" >&2; exit 2; }
export OMP_TARGET_OFFLOAD=DISABLED  # the host alone, also on a GPU machine

info=$("$hetkern" info --json)
detected=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["isa"])' "$info")
# One CPU of each core this process may use, in CPU order: CPU numbers need not follow cores (two
# hyperthreads of one core may be CPUs 0 and 1), and the affinity mask may leave some out.
read -r -a cpus <<< "$(python3 - <<'EOF'
import os
seen, cpus = set(), []
for cpu in sorted(os.sched_getaffinity(0)):
    topology = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
    core = tuple(open(topology + name).read().strip() for name in ("physical_package_id", "core_id"))
    if core not in seen:
        seen.add(core)
        cpus.append(cpu)
print(" ".join(map(str, cpus)))
EOF
)"
cores=${#cpus[@]}
levels=(portable avx2 avx512 avx512_vnni amx)
rank() { local i; for i in "${!levels[@]}"; do [[ ${levels[i]} == "$1" ]] && { echo "$i"; return; }; done; echo -1; }
((cores >= 2)) || { echo "cpu-scaling.sh: needs at least 2 cores (this process may use $cores)" >&2; exit 2; }

neighbours=()
stop_neighbours() {
  ((${#neighbours[@]})) && kill "${neighbours[@]}" 2>/dev/null
  wait "${neighbours[@]}" 2>/dev/null || true
  neighbours=()
}

core0_mhz() { awk -v cpu="${cpus[0]}" '/^processor/ {p = $3} /^cpu MHz/ && p == cpu {print $4; exit}' /proc/cpuinfo; }

# One measurement on core 0 (or unpinned with --threads above 1): its JSON record plus "mhz".
measure() {
  local isa=$1 threads=$2 pin=()
  ((threads == 1)) && pin=(taskset -c "${cpus[0]}")
  (sleep "$(python3 -c "print($min_time / 2)")"; core0_mhz > "$scratch/mhz") &
  local sampler=$!
  local record
  record=$("${pin[@]}" "$hetkern" bench qlinear-matmul --shape "$shape" --b-range -64,63 --isa "$isa" \
           --threads "$threads" --min-time "$min_time" --json)
  wait "$sampler"
  python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r["mhz"] = sys.argv[2]; print(json.dumps(r))' \
    "$record" "$(cat "$scratch/mhz")"
}

scratch=$(mktemp -d)
trap 'stop_neighbours; rm -rf "$scratch"' EXIT
records=$scratch/records.jsonl
for isa in ${CPU_SCALING_ISAS:-amx avx512_vnni}; do
  (($(rank "$isa") >= 0)) || { echo "cpu-scaling.sh: unknown level $isa" >&2; exit 2; }
  if (($(rank "$isa") > $(rank "$detected"))); then echo "not run: $isa (this CPU: $detected)" >&2; continue; fi
  for load in alone "in cache" "the same"; do
    echo "$isa: core 0 $load" >&2
    if [[ $load != alone ]]; then
      nshape=$shape
      [[ $load == "in cache" ]] && nshape=256,256,256
      for ((c = 1; c < cores; ++c)); do
        taskset -c "${cpus[c]}" "$hetkern" bench qlinear-matmul --shape "$nshape" --b-range -64,63 --isa "$isa" \
          --threads 1 --min-time 100000 --json > /dev/null &
        neighbours+=($!)
      done
      sleep 3  # every neighbour past its set-up and multiplying
    fi
    measure "$isa" 1 | python3 -c 'import json, sys; r = json.load(sys.stdin); r["load"] = sys.argv[1]; print(json.dumps(r))' "$load" >> "$records"
    stop_neighbours
  done
  echo "$isa: $cores threads" >&2
  measure "$isa" "$cores" | python3 -c 'import json, sys; r = json.load(sys.stdin); r["load"] = "all cores"; print(json.dumps(r))' >> "$records"
done

python3 - "$records" "$cores" "$shape" <<'EOF'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
cores = int(sys.argv[2])
print(f"\nqlinear-matmul {sys.argv[3].replace(',', 'x')}, B in [-64, 63]; one thread on core 0 unless 'all cores'")
print("\n| level | core 0 | hetkern GOPS | vs alone | oneDNN GOPS | vs alone | core 0 MHz |\n|---|---|---:|---:|---:|---:|---:|")
alone = {}
for r in records:
    if r["load"] == "alone":
        alone[r["isa"]] = r
    a = alone.get(r["isa"])
    if r["load"] == "all cores":
        ours = r["gops"] / (cores * a["gops"]) if a else 0
        theirs = r["onednn_gops"] / (cores * a["onednn_gops"]) if a and a["onednn_gops"] else 0
        load = f"all {cores} cores (efficiency)"
    else:
        ours = r["gops"] / a["gops"] if a else 0
        theirs = r["onednn_gops"] / a["onednn_gops"] if a and a["onednn_gops"] else 0
        load = r["load"] if r["load"] == "alone" else f"{cores - 1} other cores busy, {r['load']}"
    print(f"| {r['isa']} | {load} | {r['gops']:.0f} | {ours:.2f} | {r['onednn_gops'] or 0:.0f} | {theirs:.2f} | {r['mhz']} |")
EOF
