// qmm.split: one matmul's rows of A shared between the offload devices and the host cores, at once.
#include "schedules/qmm_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"
#include "schedules/strategies/qmm_parts.hpp"
#include "schedules/strategies/split_common.hpp"

namespace hk::detail {

const QmmStrategy& qmm_split() {
  static const QmmStrategy record{
      .name = "qmm.split",
      .meaning =
          "host tensors: the rows of A (in every batch matrix) cut into contiguous groups, "
          "gpu_share per mille of them to the offload devices (shared by their measured speeds at "
          "the matmul; each copies its rows of A, all of B, and multiplies them with "
          "qmm.offload_mma, driven by a host thread of its own) and "
          "the rest to the host cores (qmm.parallel), all at once; every output is computed by "
          "one of them, exactly",
      .params = split_params(
          "per mille of the rows of A the devices take (default 900: a device's part is bound by "
          "its arithmetic, many times the host cores')"),
      .plan = [](const QmmProblem&, const BoundParams& p) -> QmmStrategyPlan {
        return bound_split_plan("quantized_linear_matmul", p, 900);
      },
      .run = [](const QmmProblem& problem, const QmmStrategyPlan& p) {
        const auto& plan = std::get<SplitPlan>(p);
        const QmmCut rows{-1, problem.M};
        run_split(
            plan, split_ranges(problem.M, plan, split_speeds(plan, SpreadWork::matmul)),
            [&](SplitRange r) {
              const QmmProblem part = qmm_part(problem, rows, r);
              run_qmm(part, plan_qmm(part, Schedule("qmm.parallel").set("threads", plan.threads)));
            },
            [&](int, int device, SplitRange r) {
              const QmmProblem part = qmm_part(problem, rows, r);
              multiply_host_rows_on_device(problem, r, *offload_launch(plan_qmm(part, Schedule("qmm.offload_mma"))),
                                           device);
            });
      },
      .schedule = [](const QmmStrategyPlan& p) { return split_schedule("qmm.split", std::get<SplitPlan>(p)); },
      .space = [](const QmmProblem&) { return split_space(); },
      .available = offload_available,
  };
  return record;
}

}  // namespace hk::detail
