#!/usr/bin/env bash
# Runs every fuzz target of a fuzz build for a bounded time, starting from the seed corpus in the
# repository (copied, so the seeds stay as committed), and prints the executions each ran.
# Usage: test/fuzz/run.sh BUILD_DIR SECONDS [TARGET...] (default: every target). Exit status 1 when any target finds something; the
# input that triggered it is kept in BUILD_DIR/fuzz-findings/.
set -euo pipefail
build=$1
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
targets=(npy schedule_text scan_api qmm_api tuning_import)
if (($# > 2)); then targets=("${@:3}"); fi
work=$build/fuzz-work
findings=$build/fuzz-findings
mkdir -p "$findings"
failed=0
summary=()
for t in "${targets[@]}"; do
  rm -rf "${work:?}/$t" "$findings/$t"-*
  mkdir -p "$work/$t"
  cp "$here/corpus/$t"/* "$work/$t/"
  log=$work/$t.log
  # Default teams of 2 keep a run's speed independent of the machine's cores; the schedules in
  # the targets still ask for teams of 2 and 3 explicitly.
  status=0
  LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0" OMP_NUM_THREADS=2 "$build/bin/fuzz_$t" "$work/$t" -max_total_time="$seconds" \
    -print_final_stats=1 -rss_limit_mb=4096 -timeout=30 -artifact_prefix="$findings/$t-" \
    >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if ((status != 0)); then
    failed=1
    summary+=("$(printf '%-14s FINDING (exit %d) after %s executions, see %s' "$t" "$status" "${runs:-?}" "$log")")
  else
    summary+=("$(printf '%-14s %10s executions in %s s, no finding' "$t" "$runs" "$seconds")")
  fi
done
printf '%s\n' "${summary[@]}"
exit $failed
