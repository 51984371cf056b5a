// The public operator calls: validate, choose a schedule, run.
#include "hetkern/operators.hpp"

#include <string>

#include "hetkern/error.hpp"
#include "runtime/tuning/dispatch.hpp"

namespace hk {
namespace {

void run_cumulative(detail::CumulativeCall call, const Schedule& schedule) {
  detail::validate(call);
  detail::run_scan(call, detail::dispatch_scan(call, schedule));
}

}  // namespace

void cumulative_sum(ConstTensor input, Tensor output, const CumulativeOptions& options,
                    const Schedule& schedule) {
  run_cumulative({false, input, output, options}, schedule);
}

void cumulative_product(ConstTensor input, Tensor output, const CumulativeOptions& options,
                        const Schedule& schedule) {
  run_cumulative({true, input, output, options}, schedule);
}

void quantized_linear_matmul(const QuantizedMatMulArgs& args, Tensor output,
                             const Schedule& schedule) {
  const detail::QmmProblem problem = detail::validate(args, output);
  detail::run_qmm(problem, detail::dispatch_qmm(problem, schedule));
}

Schedule default_schedule(Operator op, ConstTensor input, Tensor output,
                          const CumulativeOptions& options, const Schedule& schedule) {
  if (op == Operator::quantized_linear_matmul)
    throw Error(Errc::invalid_parameter, "default_schedule", "op",
                "quantized_linear_matmul takes QuantizedMatMulArgs");
  if (op != Operator::cumulative_sum && op != Operator::cumulative_product)
    throw Error(Errc::invalid_parameter, "default_schedule", "op",
                std::to_string(static_cast<int>(op)) + " is not an Operator");
  detail::CumulativeCall call{op == Operator::cumulative_product, input, output, options};
  detail::validate(call);
  return detail::to_schedule(detail::dispatch_scan(call, schedule));
}

Schedule default_schedule(const QuantizedMatMulArgs& args, Tensor output, const Schedule& schedule) {
  return detail::to_schedule(detail::dispatch_qmm(detail::validate(args, output), schedule));
}

std::vector<StrategyInfo> strategies(Operator op) {
  switch (op) {
    case Operator::cumulative_sum:
    case Operator::cumulative_product: return detail::describe(detail::scan_strategies());
    case Operator::quantized_linear_matmul: return detail::describe(detail::qmm_strategies());
  }
  throw Error(Errc::invalid_parameter, "strategies", "op", std::to_string(static_cast<int>(op)) + " is not an Operator");
}

}  // namespace hk
