// The launch settings the offload scan kernels take (scan_offload.hpp): one struct for the three
// offload strategies, `kind` saying which. Each offload strategy's record converts its own plan
// (scan_strategies.hpp) into it.
#pragma once

#include <cstdint>

#include "algorithms/cumulative.hpp"
#include "hetkern/schedule.hpp"

namespace hk::detail {

struct ScanPlan {
  // In the order of the strategy list; only the offload kinds reach the offload kernels.
  enum class Kind { reference, tiled, parallel, blocked, offload_rows, offload_columns, offload_chained };
  Kind kind = Kind::reference;
  int teams = 0;           // OpenMP teams asked for
  int threads = 0;         // threads per team
  int items = 0;           // elements per thread in a team's tile (rows, chained)
  std::int64_t chunks = 1; // pieces the scanned axis is cut into, carries between them (columns)
  int width = 0;           // lines side by side per warp (columns)
  int ahead = 0;           // tiles requested into the L2 ahead of the loads (rows)

  bool offload() const { return kind >= Kind::offload_rows; }

  /// The schedule with every parameter explicit, e.g. "scan.offload_chained(teams=4, threads=128, items=28)".
  Schedule to_schedule() const;
};

}  // namespace hk::detail
