// reference: the specification itself, the oracle of every test; never a tuning candidate.
#include "schedules/qmm_strategies.hpp"

namespace hk::detail {

const QmmStrategy& qmm_reference() {
  static const QmmStrategy record = reference_record<QmmProblem, QmmStrategyPlan, run_qmm_reference>(
      "the specification executed one output at a time, 64-bit accumulation");
  return record;
}

}  // namespace hk::detail
