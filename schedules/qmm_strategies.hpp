// The strategies of QuantizedLinearMatMul: each one's plan type and the ordered list of their
// records (schedules/strategies/qmm_*.cpp). Adding a strategy: its record file, its plan type and
// a line in each of the variant and the list below (in the same order), its CMake source line and
// its test.
#pragma once

#include <optional>
#include <span>
#include <variant>

#include "algorithms/quantized_matmul.hpp"
#include "hetkern/topology.hpp"
#include "schedules/qmm_host.hpp"
#include "schedules/strategy.hpp"
#ifdef HETKERN_OFFLOAD
#include "schedules/qmm_offload_plan.hpp"
#include "schedules/split_plan.hpp"
#endif

namespace hk::detail {

struct ReferenceQmmPlan {};

struct TiledQmmPlan {
  QmmBlocks blocks;
};

struct ParallelQmmPlan {
  QmmBlocks blocks;
  int threads = 1;  // OpenMP threads
  PinPolicy pin = PinPolicy::none;
};

#ifdef HETKERN_OFFLOAD
// The offload plans: `team_threads` is the `threads` parameter of their schedules, threads per
// team; launch() gives the settings the offload code takes.
template <OffloadQmmKernel kernel> struct OffloadQmmPlanOf {
  int teams = 0, team_threads = 0;
  QmmPlan launch() const { return {kernel, team_threads, teams}; }
};
using OffloadQmmPlan = OffloadQmmPlanOf<OffloadQmmKernel::dp4a>;
// qmm.offload_mma's `tensor_cores`: mma.sync (OffloadQmmKernel::mma), or wgmma where the GPU has it.
struct OffloadMmaQmmPlan {
  int teams = 0, team_threads = 0;
  OffloadQmmKernel tensor_cores = OffloadQmmKernel::mma;
  int stages = 0;
  QmmPlan launch() const { return {tensor_cores, team_threads, teams, stages}; }
};

// qmm.devices: the spread, and the threads per team of each device's qmm.offload_mma.
struct DevicesQmmPlan {
  SpreadPlan spread;
  int team_threads = 128;
};
#endif

/// A plan of one of the strategies, alternatives in the order of qmm_strategies().
using QmmStrategyPlan = std::variant<ReferenceQmmPlan, TiledQmmPlan, ParallelQmmPlan
#ifdef HETKERN_OFFLOAD
                                     , OffloadQmmPlan, OffloadMmaQmmPlan, SplitPlan, DevicesQmmPlan
#endif
                                     >;

using QmmStrategy = Strategy<QmmProblem, QmmStrategyPlan>;

const QmmStrategy& qmm_reference();
const QmmStrategy& qmm_tiled();
const QmmStrategy& qmm_parallel();
#ifdef HETKERN_OFFLOAD
const QmmStrategy& qmm_offload();
const QmmStrategy& qmm_offload_mma();
const QmmStrategy& qmm_split();
const QmmStrategy& qmm_devices();
#endif

/// QuantizedLinearMatMul's strategies, in the order of schedule tables and the tuner's space.
inline std::span<const QmmStrategy* const> qmm_strategies() {
  static const QmmStrategy* const list[] = {
      &qmm_reference(), &qmm_tiled(), &qmm_parallel(),
#ifdef HETKERN_OFFLOAD
      &qmm_offload(), &qmm_offload_mma(), &qmm_split(), &qmm_devices(),
#endif
  };
  static_assert(std::size(list) == std::variant_size_v<QmmStrategyPlan>);
  return list;
}

/// Checks the schedule against the strategy list and fills the parameters it leaves out.
/// Throws hk::Error(Errc::invalid_schedule).
QmmStrategyPlan plan_qmm(const QmmProblem& problem, const Schedule& schedule);

/// The record whose plan this is.
inline const QmmStrategy& strategy_of(const QmmStrategyPlan& plan) { return *qmm_strategies()[plan.index()]; }

/// Runs a validated problem with a plan from plan_qmm.
inline void run_qmm(const QmmProblem& problem, const QmmStrategyPlan& plan) {
  strategy_of(plan).run(problem, plan);
}

/// The plan's schedule, every parameter explicit, e.g. "qmm.tiled(mc=64, nc=256, kc=256)".
inline Schedule to_schedule(const QmmStrategyPlan& plan) { return strategy_of(plan).schedule(plan); }

#ifdef HETKERN_OFFLOAD
/// The offload code's settings of an offload plan; nullopt for a host plan.
std::optional<QmmPlan> offload_launch(const QmmStrategyPlan& plan);

/// What one device of a qmm.devices call multiplies `part` with: qmm.offload_mma's plan for that
/// part (its tensor cores and stages by their defaults) with the plan's threads per team.
QmmPlan devices_part_launch(const DevicesQmmPlan& plan, const QmmProblem& part);
#endif

}  // namespace hk::detail
