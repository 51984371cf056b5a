#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: hetkern-qmm-offload-bench next to torch._int_mm, the time of
# each offload kernel, then the QuantizedLinearMatMul tests with OMP_TARGET_OFFLOAD=MANDATORY;
# the benchmark table last.
#   offload_qmm_gpu.sh BIN_DIR [M N K]
# BIN_DIR holds hetkern_tests and hetkern-qmm-offload-bench of the offload build; the offload runtime
# (bundle-runtime.sh) must be on LD_LIBRARY_PATH and CUDA's ptxas on PATH (the JIT needs it).
set -uo pipefail
bin=${1:?usage: offload_qmm_gpu.sh BIN_DIR [M N K]}
shape=("${@:2}")
((${#shape[@]} == 3)) || shape=(4096 4096 4096)
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 "$here/torch_int_mm.py" "${shape[@]}" > "$out/torch" 2>&1
OMP_TARGET_OFFLOAD=MANDATORY "$bin/hetkern-qmm-offload-bench" "${shape[@]}" > "$out/hetkern" 2>&1
echo "== time per offload kernel (LIBOMPTARGET_PROFILE, 3 calls per variant)"
OMP_TARGET_OFFLOAD=MANDATORY LIBOMPTARGET_PROFILE="$out/profile.json" \
  "$bin/hetkern-qmm-offload-bench" "${shape[@]}" --reps 3 > /dev/null 2>&1
python3 - "$out/profile.json" <<'PY'
import collections, json, re, sys
try:
    events = json.load(open(sys.argv[1]))["traceEvents"]
except (OSError, ValueError, KeyError) as e:
    sys.exit(f"no profile: {e}")
total = collections.defaultdict(lambda: [0, 0.0])
for ev in events:
    detail = str(ev.get("args", {}).get("detail", ""))
    if "omp_offloading" in detail and not ev["name"].startswith("Total"):
        m = re.search(r"_GLOBAL__N_1\d+(\w+?)(ILb[01]E)?E.*_l(\d+)", detail)
        key = f'{ev["name"]} {m.group(1) if m else detail[:60]}{"<deep>" if m and m.group(2) == "ILb1E" else ""} l{m.group(3) if m else ""}'
        total[key][0] += 1
        total[key][1] += ev.get("dur", 0) / 1000
for key, (n, ms) in sorted(total.items()):
    print(f"{key:60} {n:4} calls {ms / n:9.3f} ms each")
PY
echo "== QuantizedLinearMatMul tests on the GPU (OMP_TARGET_OFFLOAD=MANDATORY)"
OMP_TARGET_OFFLOAD=MANDATORY timeout 100 stdbuf -oL "$bin/hetkern_tests" \
  --gtest_filter='QmmOffload*:QmmProperties.*:QmmExamples.*' --gtest_brief=1 > "$out/tests" 2>&1
echo "exit status $?"; grep -E "^\[ +(PASSED|FAILED) +\]|Failure|expected|tests? from" "$out/tests" | head -15
echo "== benchmark"
tail -4 "$out/torch"
tail -11 "$out/hetkern"
