// The schedules of the cumulative operators: their strategy table, planning and host lowering.
#pragma once

#include <span>
#include <string>

#include "algorithms/cumulative.hpp"
#include "hetkern/info.hpp"
#include "hetkern/topology.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

struct ScanPlan {
  // The offload kinds exist in offload builds only (HETKERN_OFFLOAD): scan_offload.hpp.
  enum class Kind { reference, tiled, parallel, blocked, offload_rows, offload_columns, offload_chained };
  Kind kind = Kind::reference;
  std::int64_t tile = 0;   // lines walked together (tiled, parallel)
  std::int64_t block = 0;  // elements of a line per block (blocked)
  int threads = 1;
  bool stream = false;     // non-temporal stores (tiled, parallel, blocked; never in place)
  PinPolicy pin = PinPolicy::none;  // parallel, blocked
  int teams = 0;           // OpenMP teams asked for (offload)
  int items = 0;           // elements per thread in a team's tile (offload rows, chained)
  std::int64_t chunks = 1; // pieces the scanned axis is cut into, carries between them (offload columns)
  int width = 0;           // lines side by side per warp (offload columns)
  int ahead = 0;           // tiles requested into the L2 ahead of the loads (offload rows)

  bool offload() const { return kind >= Kind::offload_rows; }

  /// The schedule with every parameter explicit, e.g.
  /// "scan.parallel(tile=256, threads=2, stream=0, pin=compact)".
  Schedule to_schedule() const;
};

std::span<const StrategySpec> scan_strategies();

/// Checks the schedule against the strategy table and fills the parameters it leaves out.
/// Throws hk::Error(Errc::invalid_schedule).
ScanPlan plan_scan(const CumulativeCall& call, const Schedule& schedule);

/// Throws hk::Error(Errc::invalid_schedule) naming `schedule_text` when the offload strategies
/// cannot take the call's element type (float64 and bfloat16 run on the host only).
void check_offload_scan_type(const CumulativeCall& call, const std::string& schedule_text);

/// Runs a validated call with a plan from plan_scan.
void run_scan(const CumulativeCall& call, const ScanPlan& plan);

/// Whether the output is so much larger than the cache that stores should bypass it: then a
/// regular store's read-for-ownership costs a third of the memory traffic. Never in place.
bool scan_streams_by_default(const CumulativeCall& call);

/// The lines a schedule walks side by side by default: for lines across the scanned axis, as
/// many as keep their accumulators in half the L1 data cache (hwloc's, else 32 KiB); 256 otherwise.
std::int64_t scan_default_tile(const CumulativeCall& call);

/// Bytes of input a thread of scan.blocked takes per round: they stay in its L2 cache between
/// the two passes. A quarter of the L2 (hwloc's, else 1 MiB), at most 256 KiB.
std::int64_t scan_block_bytes();

/// The elements per block of scan.blocked by default: scan_block_bytes() of them.
std::int64_t scan_default_block(const CumulativeCall& call);

/// The scan kernels used at a level, e.g. "avx512: 8 x f64 lanes, f16 via vcvtph2ps, streaming stores".
const char* scan_kernel_path(Isa isa);

}  // namespace hk::detail
