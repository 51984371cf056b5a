// reference: the specification itself, the oracle of every test; never a tuning candidate.
#include "schedules/scan_strategies.hpp"

namespace hk::detail {

const ScanStrategy& scan_reference() {
  static const ScanStrategy record{
      .name = "reference",
      .meaning = "the specification executed line by line, single thread",
      .params = {},
      .plan = [](const CumulativeCall&, const BoundParams&) -> ScanStrategyPlan { return ReferenceScanPlan{}; },
      .run = [](const CumulativeCall& call, const ScanStrategyPlan&) { reference_cumulative(call); },
      .schedule = [](const ScanStrategyPlan&) { return Schedule("reference"); },
      .space = [](const CumulativeCall&) -> SearchSpace { return std::nullopt; },
      .available = [] { return Availability{}; },
  };
  return record;
}

}  // namespace hk::detail
