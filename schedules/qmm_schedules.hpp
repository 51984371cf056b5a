// The schedules of QuantizedLinearMatMul: strategy table, planning and host lowering.
#pragma once

#include <span>

#include "algorithms/quantized_matmul.hpp"
#include "hetkern/topology.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

struct QmmPlan {
  // In the order of the strategy table; the offload kinds exist in offload builds only.
  enum class Kind { reference, tiled, parallel, offload, offload_mma };
  Kind kind = Kind::reference;
  std::int64_t mc = 0, nc = 0, kc = 0;  // rows of A, columns of B, depth per cache block
  int threads = 1;  // host threads, or threads per team on a device
  PinPolicy pin = PinPolicy::none;  // parallel
  int teams = 0;    // device teams (offload kinds)

  /// The schedule with every parameter explicit, e.g. "qmm.tiled(mc=64, nc=256, kc=256)".
  Schedule to_schedule() const;
};

std::span<const StrategySpec> qmm_strategies();

/// Block sizes for `threads` threads from the shape and the L2 cache (hwloc's, else 1 MiB); kind
/// left as reference, pin as default_pin_policy().
QmmPlan default_qmm_blocking(const QmmProblem& problem, int threads);

/// Checks the schedule against the strategy table and fills the parameters it leaves out.
/// Throws hk::Error(Errc::invalid_schedule).
QmmPlan plan_qmm(const QmmProblem& problem, const Schedule& schedule);

/// Runs a validated problem with a plan from plan_qmm.
void run_qmm(const QmmProblem& problem, const QmmPlan& plan);

}  // namespace hk::detail
