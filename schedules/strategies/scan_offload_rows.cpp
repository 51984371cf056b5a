// scan.offload_rows: GPU teams scanning whole lines along the contiguous axis.
#include "schedules/strategies/scan_offload_common.hpp"

namespace hk::detail {

ScanPlan OffloadRowsScanPlan::launch() const {
  return {.kind = ScanPlan::Kind::rows, .teams = teams, .team_threads = team_threads, .items = items,
          .ahead = ahead};
}

Schedule OffloadRowsScanPlan::schedule() const {
  return Schedule("scan.offload_rows").set("teams", teams).set("threads", team_threads)
      .set("items", items).set("ahead", ahead);
}

const ScanStrategy& scan_offload_rows() {
  static const ScanStrategy record = offload_scan_record<OffloadRowsScanPlan>(
      "scan.offload_rows",
      "GPU (OpenMP target): each team scans whole lines, one at a time, a tile of threads x items "
      "elements at a time: each thread loads its run of items consecutive elements into "
      "registers (16 bytes at a time where aligned), folds it, the warps scan the folds with "
      "shuffles, the team combines the warp totals, each thread rescans its run from its carry; "
      "a tile inside its line with 16-byte accesses is held striped instead (a warp's every "
      "access 16 bytes per lane, contiguous); the next tile is loaded before the current one is "
      "scanned; for many lines along the contiguous axis",
      {{"teams", 1, 65536, "OpenMP teams (default: the lines, at most 1056)"},
       {"threads", 32, offload_max_threads,
        "threads per team (default 64, 128 for 2-byte types, fewer for lines shorter than "
        "that many runs; a team gets at most 512)"},
       {"items", 1, 64,
        "consecutive elements per thread in a tile, at most 64 bytes of them (default: 64 "
        "bytes, e.g. 16 for 4-byte types)"},
       {"ahead", 0, offload_max_ahead,
        "tiles further on (where accesses are 16 bytes) requested into the L2 ahead of the "
        "loads (default 1)"}},
      [](const CumulativeCall& call, const BoundParams& p) -> ScanStrategyPlan {
        const ScanPlan d = checked_offload_defaults(call, p, ScanPlan::Kind::rows);
        return OffloadRowsScanPlan{
            int(p.get("teams", d.teams)), int(p.get("threads", d.team_threads)),
            check_offload_item_bytes(call, p, int(p.get("items", d.items)), offload_rows_max_item_bytes),
            int(p.get("ahead", d.ahead))};
      });
  return record;
}

}  // namespace hk::detail
