// Planning a QuantizedLinearMatMul problem from schedule text through the strategy list.
#include "schedules/qmm_strategies.hpp"

namespace hk::detail {

QmmStrategyPlan plan_qmm(const QmmProblem& problem, const Schedule& schedule) {
  BoundParams params(schedule, {});
  return find_strategy("quantized_linear_matmul", qmm_strategies(), params).plan(problem, params);
}

#ifdef HETKERN_OFFLOAD
std::optional<QmmPlan> offload_launch(const QmmStrategyPlan& plan) {
  return launch_of<QmmPlan>(plan);
}
#endif

}  // namespace hk::detail
