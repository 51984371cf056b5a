// The schedule space of a tuning problem.
#pragma once

#include <span>
#include <vector>

#include "runtime/tuning/tuner_problem.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

/// A candidate: its schedule (planned, every parameter explicit) and its strategy's index in the
/// table.
struct SpacePoint {
  Schedule schedule;
  int strategy = 0;
};

/// Every distinct legal candidate of the problem, strategies in table order.
std::vector<SpacePoint> enumerate_space(const TuneWorkload& w, std::span<const StrategySpec> specs);

}  // namespace hk::detail
