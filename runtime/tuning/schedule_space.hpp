// The schedule space of a tuning problem: the product of the axes each available strategy
// declares (its record's space()), every candidate planned and checked against the call.
#pragma once

#include <span>
#include <vector>

#include "runtime/tuning/tuner_problem.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

/// A candidate: its schedule (planned, every parameter explicit), its strategy's index in the
/// operator's list and that strategy's parameter table.
struct SpacePoint {
  Schedule schedule;
  int strategy = 0;
  std::span<const ParamSpec> params;
};

/// Every distinct legal candidate of the problem, strategies in list order.
std::vector<SpacePoint> enumerate_space(const TuneWorkload& w);

/// The point of a planned schedule of one of the problem's strategies.
SpacePoint space_point(const TuneWorkload& w, const Schedule& planned);

}  // namespace hk::detail
