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

/// The tile of `threads` threads of scan.parallel where the schedule names none: whole lines per
/// thread, a few panels each, for lines along the contiguous axis; panels of side-by-side lines
/// enough for every thread where the lines allow otherwise; never wider than scan.tiled's.
std::int64_t scan_parallel_default_tile(const CumulativeCall& call, int threads);

}  // namespace hk::detail
