// scan.offload_chained: a single-pass chained GPU scan for few long lines.
#include "schedules/strategies/scan_offload_common.hpp"

namespace hk::detail {

ScanPlan OffloadChainedScanPlan::launch() const {
  return {.kind = ScanPlan::Kind::chained, .teams = teams, .team_threads = team_threads, .items = items};
}

Schedule OffloadChainedScanPlan::schedule() const {
  return Schedule("scan.offload_chained").set("teams", teams).set("threads", team_threads)
      .set("items", items);
}

const ScanStrategy& scan_offload_chained() {
  static const ScanStrategy record = offload_scan_record<OffloadChainedScanPlan>(
      "scan.offload_chained",
      "GPU (OpenMP target): single-pass chained scan; persistent teams take tiles of threads x "
      "items elements in order from an atomic ticket, scan them (staged through team memory "
      "by asynchronous copies when the lines are contiguous and 16-byte aligned and two tiles "
      "fit in 47 KB with at most 512 threads, else in registers as scan.offload_rows does), "
      "publish each tile's fold, look back over their predecessors' published folds and "
      "prefixes (a warp, 32 tiles at a time) for the carry: memory sees one read and one write; "
      "for few long lines",
      {{"teams", 1, 65536, "OpenMP teams (default: the tiles, at most 660)"},
       {"threads", 32, offload_max_threads, "threads per team (default 128)"},
       {"items", 1, 64,
        "consecutive elements per thread in a tile, at most 128 bytes of them (default: 112 "
        "bytes, e.g. 28 for 4-byte types)"}},
      [](const CumulativeCall& call, const BoundParams& p) -> ScanStrategyPlan {
        const ScanPlan d = checked_offload_defaults(call, p, ScanPlan::Kind::chained);
        return OffloadChainedScanPlan{
            int(p.get("teams", d.teams)), int(p.get("threads", d.team_threads)),
            check_offload_item_bytes(call, p, int(p.get("items", d.items)), offload_chained_max_item_bytes)};
      });
  return record;
}

}  // namespace hk::detail
