// The schedules of the cumulative operators: their strategy table, planning and host lowering.
#pragma once

#include <span>

#include "algorithms/cumulative.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

struct ScanPlan {
  enum class Kind { reference, tiled, parallel, blocked };
  Kind kind = Kind::reference;
  std::int64_t tile = 0;   // lines walked together (tiled, parallel)
  std::int64_t block = 0;  // elements of a line per block (blocked)
  int threads = 1;

  /// The schedule with every parameter explicit, e.g. "scan.parallel(tile=256, threads=2)".
  Schedule to_schedule() const;
};

std::span<const StrategySpec> scan_strategies();

/// Checks the schedule against the strategy table and fills the parameters it leaves out.
/// Throws hk::Error(Errc::invalid_schedule).
ScanPlan plan_scan(const CumulativeCall& call, const Schedule& schedule);

/// Runs a validated call with a plan from plan_scan.
void run_scan(const CumulativeCall& call, const ScanPlan& plan);

}  // namespace hk::detail
