// qmm.split: one matmul's rows of A shared between the offload devices and the host cores, at once.
#include "schedules/qmm_offload.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"
#include "schedules/strategies/split_common.hpp"

namespace hk::detail {
namespace {

// A per-row parameter's rows [r.begin, r.end); one value shared by every row stays as it is.
template <class T> std::vector<T> param_rows(const std::vector<T>& v, SplitRange r) {
  if (v.size() == 1) return v;
  return {v.begin() + r.begin, v.begin() + r.end};
}

// Rows [r.begin, r.end) of A, and of the output, in every batch matrix: the same problem on fewer
// rows, whose outputs are those rows' outputs of the whole.
QmmProblem rows_of(const QmmProblem& p, SplitRange r) {
  QmmProblem part = p;
  part.M = r.size();
  // A and the output hold one-byte elements.
  part.a.data = static_cast<const char*>(p.a.data) + r.begin * p.a.row_stride;
  part.out = static_cast<char*>(p.out) + r.begin * p.out_row_stride;
  part.q.a_scale = param_rows(p.q.a_scale, r);
  part.q.a_zero = param_rows(p.q.a_zero, r);
  part.q.out_scale = param_rows(p.q.out_scale, r);
  part.q.out_zero = param_rows(p.q.out_zero, r);
  return part;
}

}  // namespace

const QmmStrategy& qmm_split() {
  static const QmmStrategy record{
      .name = "qmm.split",
      .meaning =
          "host tensors: the rows of A (in every batch matrix) cut into contiguous groups, "
          "gpu_share per mille of them to the offload devices (each copies its rows of A, all of "
          "B, and multiplies them with qmm.offload_mma, driven by a host thread of its own) and "
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
        run_split(
            plan, problem.M,
            [&](SplitRange r) {
              const QmmProblem part = rows_of(problem, r);
              run_qmm(part, plan_qmm(part, Schedule("qmm.parallel").set("threads", plan.threads)));
            },
            [&](int device, SplitRange r) {
              const QmmProblem part = rows_of(problem, r);
              run_qmm_offload(part, *offload_launch(plan_qmm(part, Schedule("qmm.offload_mma"))), device);
            });
      },
      .schedule = [](const QmmStrategyPlan& p) { return split_schedule("qmm.split", std::get<SplitPlan>(p)); },
      .space = [](const QmmProblem&) { return split_space(); },
      .available = offload_available,
  };
  return record;
}

}  // namespace hk::detail
