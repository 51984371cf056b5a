// qmm.split: one matmul's rows of A shared between the offload devices and the host cores, at once.
#include <cstdint>
#include <vector>

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

// Whether the span of every part's output (what a device copies back whole) holds only its own
// rows: one matrix whose rows do not interleave.
bool parts_own_their_spans(const QmmProblem& p) {
  return p.batch[0] * p.batch[1] == 1 && (p.N - 1) * p.out_col_stride < p.out_row_stride;
}

// A device's rows. Where their span holds other rows, which the host writes meanwhile, the device
// writes a packed copy that is then copied into place.
void multiply_on_device(const QmmProblem& problem, SplitRange r, int device) {
  QmmProblem part = rows_of(problem, r);
  const QmmPlan plan = *offload_launch(plan_qmm(part, Schedule("qmm.offload_mma")));
  if (parts_own_their_spans(problem)) {
    run_qmm_offload(part, plan, device);
    return;
  }
  const std::int64_t batches = problem.batch[0] * problem.batch[1], rows = r.size(), N = problem.N;
  std::vector<std::uint8_t> packed(std::size_t(batches * rows * N));
  char* const out = static_cast<char*>(part.out);
  part.out = packed.data();
  part.out_batch_stride[0] = problem.batch[1] * rows * N;
  part.out_batch_stride[1] = rows * N;
  part.out_row_stride = N;
  part.out_col_stride = 1;
  run_qmm_offload(part, plan, device);
  for (std::int64_t t = 0; t < batches; ++t) {
    const std::int64_t batch_offset =
        (t / problem.batch[1]) * problem.out_batch_stride[0] + (t % problem.batch[1]) * problem.out_batch_stride[1];
    for (std::int64_t m = 0; m < rows; ++m)
      for (std::int64_t n = 0; n < N; ++n)
        out[batch_offset + m * problem.out_row_stride + n * problem.out_col_stride] =
            char(packed[std::size_t((t * rows + m) * N + n)]);
  }
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
            [&](int, int device, SplitRange r) { multiply_on_device(problem, r, device); });
      },
      .schedule = [](const QmmStrategyPlan& p) { return split_schedule("qmm.split", std::get<SplitPlan>(p)); },
      .space = [](const QmmProblem&) { return split_space(); },
      .available = offload_available,
  };
  return record;
}

}  // namespace hk::detail
