// Dispatch of every operator call, on host or device tensors: an explicit schedule, else
// HETKERN_SCHEDULE, then the tuning database (exact record, then the nearest tuned shape of the
// same class), then the cost model where a GPU is present, then the heuristic; each decision without an explicit schedule cached in memory
// per call class.
#pragma once

#include <string>

#include "hetkern/tuning.hpp"
#include "runtime/tuning/heuristic.hpp"

namespace hk::detail {

/// Bumped when an operator's algorithm changes what it computes or what a schedule costs, so
/// that records measured with the old one are no longer found.
inline constexpr int scan_algorithm_version = 1;
inline constexpr int qmm_algorithm_version = 1;

/// The database key of a validated call whose tensors lie at `home`, with the current machine
/// fingerprint. Device tensors get their own stride classes ("device_packed", ...), so that their
/// records and the host tensors' never mix; host keys are those of earlier versions.
TuningRecord scan_key(const CumulativeCall& call, DataHome home = DataHome::host);
TuningRecord qmm_key(const QmmProblem& problem, DataHome home = DataHome::host);

/// The plan a validated call runs, whatever its tensors: `schedule` when not empty, else the
/// first of HETKERN_SCHEDULE naming a strategy of the operator, the exact tuning record, the
/// nearest tuned shape, the cost model (with a GPU: model_choice.hpp), the heuristic. For tensors in device memory only offload strategies
/// qualify: a HETKERN_SCHEDULE entry or record naming a host strategy is skipped (the dispatch
/// log says so), and an explicit host schedule is hk::Error(invalid_schedule). Never throws
/// because of the database (a warning goes to stderr and the next rule is used); throws
/// hk::Error(invalid_schedule) for an illegal explicit schedule, or when HETKERN_SCHEDULE names a
/// strategy of the operator with parameters illegal for the call. HETKERN_LOG=dispatch prints
/// every decision: the device that runs the call and the rule that chose it.
ScanStrategyPlan dispatch_scan(const CumulativeCall& call, const Schedule& schedule = {},
                               DataHome home = DataHome::host);
QmmStrategyPlan dispatch_qmm(const QmmProblem& problem, const Schedule& schedule = {},
                             DataHome home = DataHome::host);

/// The nearest-shape distance used by dispatch: the sum over dimensions of |log2(a/b)|;
/// infinite for shapes of different rank.
double shape_distance(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b);

/// Records further than this are not "near": a factor of 4 in one size, or 2 in each of two.
inline constexpr double max_nearest_distance = 2.0;

}  // namespace hk::detail
