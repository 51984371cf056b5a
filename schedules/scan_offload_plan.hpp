// The launch settings the offload scan kernels take (scan_offload.hpp): one struct for the three
// offload strategies, `kind` saying which kernel family runs. Each offload strategy's record
// converts its own plan (scan_strategies.hpp) into it.
#pragma once

#include <cstdint>

namespace hk::detail {

struct ScanPlan {
  enum class Kind { rows, columns, chained, warp_rows };
  Kind kind = Kind::rows;
  int teams = 0;           // OpenMP teams asked for
  int team_threads = 0;    // threads per team
  int items = 0;           // elements per thread in a team's tile (rows, chained); vectors a lane
                           // loads ahead (warp_rows)
  std::int64_t chunks = 1; // pieces the scanned axis is cut into, carries between them (columns)
  int width = 0;           // lines side by side per team (columns)
  int ahead = 0;           // tiles requested into the L2 ahead of the loads (rows)
  int stages = 1;          // tiles in a ring in team memory, 1: the next tile in registers (columns)
};

}  // namespace hk::detail
