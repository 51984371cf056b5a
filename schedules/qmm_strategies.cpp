// Planning a QuantizedLinearMatMul problem from schedule text through the strategy list.
#include "schedules/qmm_strategies.hpp"

#ifdef HETKERN_OFFLOAD
#include "schedules/qmm_offload.hpp"
#endif

namespace hk::detail {

QmmStrategyPlan plan_qmm(const QmmProblem& problem, const Schedule& schedule) {
  BoundParams params(schedule, {});
  return find_strategy("quantized_linear_matmul", qmm_strategies(), params).plan(problem, params);
}

#ifdef HETKERN_OFFLOAD
std::optional<QmmPlan> offload_launch(const QmmStrategyPlan& plan) {
  return launch_of<QmmPlan>(plan);
}

QmmPlan default_offload_qmm_plan(const QmmProblem& problem) {
  return *offload_launch(plan_qmm(problem, Schedule("qmm.offload_mma")));
}
#endif

}  // namespace hk::detail
