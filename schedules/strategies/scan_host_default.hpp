// The host strategy a scan gets by default for a number of threads: what an untuned host call
// runs, and what the host's part of scan.split runs with the threads left to it.
#pragma once

#include "algorithms/cumulative.hpp"
#include "schedules/scan_strategies.hpp"

namespace hk::detail {

/// scan.tiled for small calls or one thread; whole lines per thread (scan.parallel) where there
/// are enough of them; panels of side-by-side lines for lines across the scanned axis; else each
/// line cut into blocks (scan.blocked). Every threaded plan uses `threads` threads at most.
ScanStrategyPlan default_host_scan_plan(const CumulativeCall& call, int threads);

}  // namespace hk::detail
