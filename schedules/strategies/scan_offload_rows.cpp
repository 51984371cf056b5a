// scan.offload_rows: GPU teams scanning whole lines along the contiguous axis.
#include "schedules/scan_offload.hpp"
#include "schedules/scan_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"
#include "schedules/strategies/scan_offload_common.hpp"

namespace hk::detail {

ScanPlan OffloadRowsScanPlan::launch() const {
  ScanPlan l;
  l.kind = ScanPlan::Kind::offload_rows;
  l.teams = teams, l.threads = team_threads, l.items = items, l.ahead = ahead;
  return l;
}

const ScanStrategy& scan_offload_rows() {
  static const ScanStrategy record{
      .name = "scan.offload_rows",
      .meaning =
          "GPU (OpenMP target): each team scans whole lines, one at a time, a tile of threads x items "
          "elements at a time: each thread loads its run of items consecutive elements into "
          "registers (16 bytes at a time where aligned), folds it, the warps scan the folds with "
          "shuffles, the team combines the warp totals, each thread rescans its run from its carry; "
          "a tile inside its line with 16-byte accesses is held striped instead (a warp's every "
          "access 16 bytes per lane, contiguous); the next tile is loaded before the current one is "
          "scanned; for many lines along the contiguous axis",
      .params = {{"teams", 1, 65536, "OpenMP teams (default: the lines, at most 1056)"},
                 {"threads", 32, offload_max_threads,
                  "threads per team (default 64, 128 for 2-byte types, fewer for lines shorter than "
                  "that many runs; a team gets at most 512)"},
                 {"items", 1, 64,
                  "consecutive elements per thread in a tile, at most 64 bytes of them (default: 64 "
                  "bytes, e.g. 16 for 4-byte types)"},
                 {"ahead", 0, offload_max_ahead,
                  "tiles further on (where accesses are 16 bytes) requested into the L2 ahead of the "
                  "loads (default 1)"}},
      .plan = [](const CumulativeCall& call, const BoundParams& p) -> ScanStrategyPlan {
        check_offload_scan_type(call, p.schedule().to_string());
        const ScanPlan d = offload_scan_defaults(call, ScanPlan::Kind::offload_rows);
        const OffloadRowsScanPlan plan{int(p.get("teams", d.teams)), int(p.get("threads", d.threads)),
                                       int(p.get("items", d.items)), int(p.get("ahead", d.ahead))};
        check_offload_item_bytes(call, p, plan.items, offload_rows_max_item_bytes);
        return plan;
      },
      .run = [](const CumulativeCall& call, const ScanStrategyPlan& plan) {
        run_scan_offload_host(call, std::get<OffloadRowsScanPlan>(plan).launch());
      },
      .schedule = [](const ScanStrategyPlan& plan) {
        const auto& r = std::get<OffloadRowsScanPlan>(plan);
        return Schedule("scan.offload_rows").set("teams", r.teams).set("threads", r.team_threads)
            .set("items", r.items).set("ahead", r.ahead);
      },
      .space = [](const CumulativeCall&) -> SearchSpace { return offload_team_space(); },
      .available = offload_available,
  };
  return record;
}

}  // namespace hk::detail
