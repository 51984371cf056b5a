// reference: the specification itself, the oracle of every test; never a tuning candidate.
#include "schedules/qmm_strategies.hpp"

namespace hk::detail {

const QmmStrategy& qmm_reference() {
  static const QmmStrategy record{
      .name = "reference",
      .meaning = "the specification executed one output at a time, 64-bit accumulation",
      .params = {},
      .plan = [](const QmmProblem&, const BoundParams&) -> QmmStrategyPlan { return ReferenceQmmPlan{}; },
      .run = [](const QmmProblem& problem, const QmmStrategyPlan&) { run_qmm_reference(problem); },
      .schedule = [](const QmmStrategyPlan&) { return Schedule("reference"); },
      .space = [](const QmmProblem&) -> SearchSpace { return std::nullopt; },
      .available = [] { return Availability{}; },
  };
  return record;
}

}  // namespace hk::detail
