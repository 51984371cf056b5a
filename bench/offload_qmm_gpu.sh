#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: hetkern-qmm-offload-bench next to torch._int_mm, then the
# QuantizedLinearMatMul tests with OMP_TARGET_OFFLOAD=MANDATORY (at most TEST_SECONDS, default 600);
# the benchmark table last.
#   offload_qmm_gpu.sh BIN_DIR [M N K]...   (default 4096 4096 4096)
# BIN_DIR holds hetkern_tests and hetkern-qmm-offload-bench of the offload build; the offload runtime
# (bundle-runtime.sh) must be on LD_LIBRARY_PATH and CUDA's ptxas on PATH (the JIT needs it).
set -uo pipefail
bin=${1:?usage: offload_qmm_gpu.sh BIN_DIR [M N K]...}
shape=("${@:2}")
((${#shape[@]} > 0 && ${#shape[@]} % 3 == 0)) || shape=(4096 4096 4096)
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for ((i = 0; i < ${#shape[@]}; i += 3)); do python3 "$here/torch_int_mm.py" "${shape[@]:i:3}"; done > "$out/torch" 2>&1
OMP_TARGET_OFFLOAD=MANDATORY "$bin/hetkern-qmm-offload-bench" "${shape[@]}" > "$out/hetkern" 2>&1
echo "== QuantizedLinearMatMul tests on the GPU (OMP_TARGET_OFFLOAD=MANDATORY)"
OMP_TARGET_OFFLOAD=MANDATORY timeout "${TEST_SECONDS:-600}" stdbuf -oL "$bin/hetkern_tests" \
  --gtest_filter='QmmOffload*:QmmProperties.*:QmmExamples.*' --gtest_brief=1 > "$out/tests" 2>&1
echo "exit status $?"; grep -E "^\[ +(PASSED|FAILED) +\]|Failure|expected|tests? from" "$out/tests" | head -15
echo "== benchmark"
cat "$out/torch"
sed -n '/^QuantizedLinearMatMul/,$p' "$out/hetkern"
