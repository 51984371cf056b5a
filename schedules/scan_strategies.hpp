// The strategies of the cumulative operators: each one's plan type and the ordered list of their
// records (schedules/strategies/scan_*.cpp). Adding a strategy: its record file, its plan type and
// a line in each of the variant and the list below (in the same order), its CMake source line and
// its test.
#pragma once

#include <span>
#include <variant>

#include "algorithms/cumulative.hpp"
#include "hetkern/topology.hpp"
#include "schedules/strategy.hpp"
#ifdef HETKERN_OFFLOAD
#include "schedules/scan_offload_plan.hpp"
#include "schedules/split_plan.hpp"
#endif

namespace hk::detail {

struct ReferenceScanPlan {};

struct TiledScanPlan {
  std::int64_t tile = 0;  // lines walked together
  bool stream = false;    // non-temporal stores (never in place)
};

struct ParallelScanPlan {
  std::int64_t tile = 0;
  int threads = 1;  // OpenMP threads
  bool stream = false;
  PinPolicy pin = PinPolicy::none;
};

struct BlockedScanPlan {
  std::int64_t block = 0;  // elements of a line per block
  int threads = 1;
  bool stream = false;
  PinPolicy pin = PinPolicy::none;
};

#ifdef HETKERN_OFFLOAD
// The offload plans: `team_threads` is the `threads` parameter of their schedules, threads per team;
// launch() gives the settings the offload kernels take, schedule() the plan as schedule text.
struct OffloadRowsScanPlan {
  int teams = 0, team_threads = 0;
  int items = 0;  // consecutive elements per thread in a tile
  int ahead = 0;  // tiles requested into the L2 ahead of the loads
  ScanPlan launch() const;
  Schedule schedule() const;
};

struct OffloadWarpRowsScanPlan {
  int teams = 0, team_threads = 0;
  int vectors = 0;  // 16-byte vectors a lane loads ahead of those it scans
  ScanPlan launch() const;
  Schedule schedule() const;
};

struct OffloadColumnsScanPlan {
  int teams = 0, team_threads = 0;
  std::int64_t chunks = 1;  // pieces of the scanned axis, carries between them
  int items = 0;            // rows per thread in a tile (chunks = 1)
  int width = 0;            // lines side by side per team (chunks = 1)
  int stages = 1;           // tiles in team memory, 1: the next in registers (chunks = 1)
  ScanPlan launch() const;
  Schedule schedule() const;
};

struct OffloadChainedScanPlan {
  int teams = 0, team_threads = 0;
  int items = 0;
  ScanPlan launch() const;
  Schedule schedule() const;
};
#endif

/// A plan of one of the strategies, alternatives in the order of scan_strategies().
using ScanStrategyPlan = std::variant<ReferenceScanPlan, TiledScanPlan, ParallelScanPlan, BlockedScanPlan
#ifdef HETKERN_OFFLOAD
                                      , OffloadRowsScanPlan, OffloadWarpRowsScanPlan, OffloadColumnsScanPlan, OffloadChainedScanPlan, SplitPlan
#endif
                                      >;

using ScanStrategy = Strategy<CumulativeCall, ScanStrategyPlan>;

const ScanStrategy& scan_reference();
const ScanStrategy& scan_tiled();
const ScanStrategy& scan_parallel();
const ScanStrategy& scan_blocked();
#ifdef HETKERN_OFFLOAD
const ScanStrategy& scan_offload_rows();
const ScanStrategy& scan_offload_warp_rows();
const ScanStrategy& scan_offload_columns();
const ScanStrategy& scan_offload_chained();
const ScanStrategy& scan_split();
#endif

/// The cumulative operators' strategies, in the order of schedule tables and the tuner's space.
inline std::span<const ScanStrategy* const> scan_strategies() {
  static const ScanStrategy* const list[] = {
      &scan_reference(), &scan_tiled(), &scan_parallel(), &scan_blocked(),
#ifdef HETKERN_OFFLOAD
      &scan_offload_rows(), &scan_offload_warp_rows(), &scan_offload_columns(), &scan_offload_chained(), &scan_split(),
#endif
  };
  static_assert(std::size(list) == std::variant_size_v<ScanStrategyPlan>);
  return list;
}

/// Checks the schedule against the strategy list and fills the parameters it leaves out.
/// Throws hk::Error(Errc::invalid_schedule).
ScanStrategyPlan plan_scan(const CumulativeCall& call, const Schedule& schedule);

/// The record whose plan this is.
inline const ScanStrategy& strategy_of(const ScanStrategyPlan& plan) { return *scan_strategies()[plan.index()]; }

/// Runs a validated call with a plan from plan_scan.
inline void run_scan(const CumulativeCall& call, const ScanStrategyPlan& plan) {
  strategy_of(plan).run(call, plan);
}

/// The plan's schedule, every parameter explicit, e.g.
/// "scan.parallel(tile=256, threads=2, stream=0, pin=compact)".
inline Schedule to_schedule(const ScanStrategyPlan& plan) { return strategy_of(plan).schedule(plan); }

#ifdef HETKERN_OFFLOAD
/// The offload kernels' settings of an offload plan; nullopt for a host plan.
std::optional<ScanPlan> offload_launch(const ScanStrategyPlan& plan);
#endif

}  // namespace hk::detail
