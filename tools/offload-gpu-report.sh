#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: the offload build's tests with OMP_TARGET_OFFLOAD=MANDATORY,
# then the benchmark table (hetkern's offload scans next to the OpenMP copy canary built the same
# way, torch.cumsum and the CUDA copy; QuantizedLinearMatMul next to torch._int_mm in its fastest
# layout), printed last.
#
# usage: tools/offload-gpu-report.sh [--quick] [--sweep] [--case rows|columns|chained]...
#   the options go to the scan bench programs and PyTorch's script; --quick also shrinks the
#   matmuls to 1024^3
#   QMM_SHAPES  the matmuls, M N K triples (default 4096^3, 8192^3 and 128 x 4096 x 4096)
#   BIN  folder with hetkern_tests and hetkern-offload-bench* (default build/release/bin)
#   OUT  folder for the JSON records (default /tmp/hetkern-offload-report)
#   LIMIT  seconds each step may take before it is stopped (default 600): a kernel that hangs
#          on the GPU must not hang the report
# Every BIN/hetkern-offload-bench* program and every group of bench/offload_torch.py contributes
# records; a new operator adds its program or group and its rows appear in the table.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/release/bin}
OUT=${OUT:-/tmp/hetkern-offload-report}
LIMIT=${LIMIT:-600}
mkdir -p "$OUT" && rm -f "$OUT"/*.jsonl
# The JIT finishes kernels with CUDA's ptxas.
command -v ptxas >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
command -v ptxas >/dev/null || echo "warning: no ptxas on PATH: kernels cannot be compiled for the GPU" >&2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
status=0
echo "== tests (OMP_TARGET_OFFLOAD=MANDATORY), log in $OUT/tests.log"
OMP_TARGET_OFFLOAD=MANDATORY timeout "$LIMIT" "$BIN/hetkern_tests" --gtest_brief=1 > "$OUT/tests.log" 2>&1 || status=1
tests=$(grep -E '^\[  (PASSED|FAILED)  \]|tests? from .* ran' "$OUT/tests.log" | tr '\n' ' ')
((status == 0)) || { grep -E '^\[  FAILED  \]|Failure|error' "$OUT/tests.log" | head -20; tests="FAILED (exit status) $tests"; }
echo "== benchmarks"
for bench in "$BIN"/hetkern-offload-bench*; do
  OMP_TARGET_OFFLOAD=MANDATORY timeout "$LIMIT" "$bench" "$@" > "$OUT/$(basename "$bench").jsonl" || status=1
done
# The same matmuls for hetkern and torch._int_mm (offload_torch.py reads QMM_SHAPES too).
export QMM_SHAPES=${QMM_SHAPES:-4096 4096 4096 8192 8192 8192 128 4096 4096}
[[ " $* " == *" --quick "* ]] && QMM_SHAPES="1024 1024 1024"
# shellcheck disable=SC2086  # the shapes are separate arguments
OMP_TARGET_OFFLOAD=MANDATORY timeout "$LIMIT" "$BIN/hetkern-qmm-offload-bench" $QMM_SHAPES --jsonl \
  > "$OUT/hetkern-qmm-offload-bench.jsonl" || status=1
timeout "$LIMIT" python3 bench/offload_torch.py "$@" > "$OUT/torch.jsonl" || echo "no PyTorch rows" >&2
echo "== tests: $tests"
python3 bench/offload_report.py "$OUT"/*.jsonl
exit $status
