// scan.offload_warp_rows: GPU warps scanning whole lines along the contiguous axis, a warp a line.
#include <string>

#include "hetkern/error.hpp"
#include "schedules/offload/scan_limits.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/strategies/scan_offload_common.hpp"

namespace hk::detail {

ScanPlan OffloadWarpRowsScanPlan::launch() const {
  return {.kind = ScanPlan::Kind::warp_rows, .teams = teams, .team_threads = team_threads, .items = vectors};
}

Schedule OffloadWarpRowsScanPlan::schedule() const {
  return Schedule("scan.offload_warp_rows").set("teams", teams).set("threads", team_threads)
      .set("vectors", vectors);
}

namespace {

// The tuner's space: warps per team and vectors loaded ahead (the best of each differed by type on
// an H100, docs/performance.md).
SearchSpace warp_rows_space(const CumulativeCall&) {
  return std::vector<SpaceAxis>{{"threads", {"64", "128", "256"}}, {"vectors", {"1", "2", "4"}}};
}

ScanStrategyPlan warp_rows_plan(const CumulativeCall& call, const BoundParams& p) {
  const ScanPlan d = checked_offload_defaults(call, p, ScanPlan::Kind::warp_rows);
  const int threads = int(p.get("threads", d.team_threads));
  if (threads % 32)
    throw Error(Errc::invalid_schedule, call.op_name(), p.schedule().to_string(),
                "threads = " + std::to_string(threads) + " is not a whole number of warps (a multiple of 32)");
  // Without teams: enough for a warp a line at the threads given.
  const std::int64_t teams = offload_warp_rows_teams(make_scan_layout(call).lines(), threads);
  return OffloadWarpRowsScanPlan{int(p.get("teams", teams)), threads, int(p.get("vectors", d.items))};
}

}  // namespace

const ScanStrategy& scan_offload_warp_rows() {
  static const ScanStrategy record = offload_scan_record<OffloadWarpRowsScanPlan>(
      "scan.offload_warp_rows",
      "GPU (OpenMP target): each warp scans whole lines, one at a time, in chunks of 32 lanes x "
      "16 bytes: each lane scans its elements, the warp scans the lanes' folds with shuffles and "
      "carries the chunk's total to the next; no team memory and no barrier, and the next "
      "chunks' loads are in flight while a warp scans; 16-byte loads and stores where the "
      "input and output lines lie at the same distance from a 16-byte boundary; for many lines "
      "along the contiguous axis",
      {{"teams", 1, 65536, "OpenMP teams (default: one warp a line, at most 65536 teams)"},
       {"threads", 32, offload_max_threads, "threads per team, a multiple of 32 (default 128, a warp a line for fewer than 4 lines)"},
       {"vectors", 1, offload_warp_rows_max_vectors,
        "16-byte vectors a lane loads ahead of those it scans (default 4)"}},
      warp_rows_plan, warp_rows_space);
  return record;
}

}  // namespace hk::detail
