// Dispatch of calls that name no schedule: HETKERN_SCHEDULE, then the tuning database (exact
// record, then the nearest tuned shape of the same class), then the heuristic; each decision
// cached in memory per call class.
#pragma once

#include <string>

#include "hetkern/tuning.hpp"
#include "runtime/tuning/heuristic.hpp"

namespace hk::detail {

/// Bumped when an operator's algorithm changes what it computes or what a schedule costs, so
/// that records measured with the old one are no longer found.
inline constexpr int scan_algorithm_version = 1;
inline constexpr int qmm_algorithm_version = 1;

/// The database key of a validated call, with the current machine fingerprint.
TuningRecord scan_key(const CumulativeCall& call);
TuningRecord qmm_key(const QmmProblem& problem);

/// The plan for a validated call with an empty schedule. Never throws because of the database
/// (a warning goes to stderr and the heuristic is used); throws hk::Error(invalid_schedule) when
/// HETKERN_SCHEDULE names a strategy of the operator with parameters illegal for the call.
ScanStrategyPlan dispatch_scan(const CumulativeCall& call);
QmmStrategyPlan dispatch_qmm(const QmmProblem& problem);

/// The nearest-shape distance used by dispatch: the sum over dimensions of |log2(a/b)|;
/// infinite for shapes of different rank.
double shape_distance(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b);

/// Records further than this are not "near": a factor of 4 in one size, or 2 in each of two.
inline constexpr double max_nearest_distance = 2.0;

}  // namespace hk::detail
