// reference: the specification itself, the oracle of every test; never a tuning candidate.
#include "schedules/scan_strategies.hpp"

namespace hk::detail {

const ScanStrategy& scan_reference() {
  static const ScanStrategy record = reference_record<CumulativeCall, ScanStrategyPlan, reference_cumulative>(
      "the specification executed line by line, single thread");
  return record;
}

}  // namespace hk::detail
