// scan.offload_chained: a single-pass chained GPU scan for few long lines.
#include "schedules/scan_offload.hpp"
#include "schedules/scan_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"
#include "schedules/strategies/scan_offload_common.hpp"

namespace hk::detail {

ScanPlan OffloadChainedScanPlan::launch() const {
  ScanPlan l;
  l.kind = ScanPlan::Kind::offload_chained;
  l.teams = teams, l.threads = team_threads, l.items = items;
  return l;
}

const ScanStrategy& scan_offload_chained() {
  static const ScanStrategy record{
      .name = "scan.offload_chained",
      .meaning =
          "GPU (OpenMP target): single-pass chained scan; persistent teams take tiles of threads x "
          "items elements in order from an atomic ticket, scan them (staged through team memory "
          "by asynchronous copies when the lines are contiguous and 16-byte aligned and two tiles "
          "fit in 47 KB with at most 512 threads, else in registers as scan.offload_rows does), "
          "publish each tile's fold, look back over their predecessors' published folds and "
          "prefixes (a warp, 32 tiles at a time) for the carry: memory sees one read and one write; "
          "for few long lines",
      .params = {{"teams", 1, 65536, "OpenMP teams (default: the tiles, at most 660)"},
                 {"threads", 32, offload_max_threads, "threads per team (default 128)"},
                 {"items", 1, 64,
                  "consecutive elements per thread in a tile, at most 128 bytes of them (default: 112 "
                  "bytes, e.g. 28 for 4-byte types)"}},
      .plan = [](const CumulativeCall& call, const BoundParams& p) -> ScanStrategyPlan {
        check_offload_scan_type(call, p.schedule().to_string());
        const ScanPlan d = offload_scan_defaults(call, ScanPlan::Kind::offload_chained);
        const OffloadChainedScanPlan plan{int(p.get("teams", d.teams)), int(p.get("threads", d.threads)),
                                          int(p.get("items", d.items))};
        check_offload_item_bytes(call, p, plan.items, offload_chained_max_item_bytes);
        return plan;
      },
      .run = [](const CumulativeCall& call, const ScanStrategyPlan& plan) {
        run_scan_offload_host(call, std::get<OffloadChainedScanPlan>(plan).launch());
      },
      .schedule = [](const ScanStrategyPlan& plan) {
        const auto& c = std::get<OffloadChainedScanPlan>(plan);
        return Schedule("scan.offload_chained").set("teams", c.teams).set("threads", c.team_threads)
            .set("items", c.items);
      },
      .space = [](const CumulativeCall&) -> SearchSpace { return offload_team_space(); },
      .available = offload_available,
  };
  return record;
}

}  // namespace hk::detail
