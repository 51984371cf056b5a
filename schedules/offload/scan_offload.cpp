// The offload scans as the schedules see them (schedules/scan_offload.hpp): each strategy's
// defaults, the plan a call on device tensors gets without a schedule, and the dispatch to the
// kernel family of a plan. No target region here: the families' launch files hold them.
#include "schedules/scan_offload.hpp"

#include <omp.h>

#include "schedules/offload/scan_launch.hpp"
#include "schedules/scan_layout.hpp"

namespace hk::detail {

ScanPlan offload_scan_defaults(const CumulativeCall& call, ScanPlan::Kind kind) {
  switch (kind) {
    case ScanPlan::Kind::rows: return offload::scan::rows_defaults(call);
    case ScanPlan::Kind::warp_rows: return offload::scan::warp_rows_defaults(call);
    case ScanPlan::Kind::columns: return offload::scan::columns_defaults(call);
    case ScanPlan::Kind::chained: break;
  }
  return offload::scan::chained_defaults(call);
}

ScanPlan default_offload_scan_plan(const CumulativeCall& call) {
  const ScanLayout s = make_scan_layout(call);
  if (!s.lines_are_rows()) return offload::scan::columns_defaults(call);
  // Enough lines to give every team its own, or lines no longer than one chained tile (whose
  // look-back buys nothing): a warp per line; otherwise tiles of a few long lines.
  const ScanPlan chained = offload::scan::chained_defaults(call);
  if (s.lines() >= offload::scan::rows_default_teams_cap ||
      s.length <= std::int64_t(chained.team_threads) * chained.items)
    return offload::scan::warp_rows_defaults(call);
  return chained;
}

void run_scan_offload(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry) {
  // The host fallback scans every line serially whatever the strategy: the rows region's host
  // body (the others' device-only regions then never run on the host).
  if (device == omp_get_initial_device() || plan.kind == ScanPlan::Kind::rows)
    offload::scan::launch_rows(call, plan, device, carry);
  else if (plan.kind == ScanPlan::Kind::warp_rows)
    offload::scan::launch_warp_rows(call, plan, device, carry);
  else if (plan.kind == ScanPlan::Kind::columns)
    offload::scan::launch_columns(call, plan, device, carry);
  else
    offload::scan::launch_chained(call, plan, device, carry);
}

void fold_scan_line_offload(const CumulativeCall& call, int device, void* fold) {
  offload::scan::fold_line(call, device, fold);
}

}  // namespace hk::detail
