// Planning a cumulative call from schedule text through the strategy list.
#include "schedules/scan_strategies.hpp"

namespace hk::detail {

ScanStrategyPlan plan_scan(const CumulativeCall& call, const Schedule& schedule) {
  BoundParams params(schedule, {});
  return find_strategy(call.op_name(), scan_strategies(), params).plan(call, params);
}

#ifdef HETKERN_OFFLOAD
std::optional<ScanPlan> offload_launch(const ScanStrategyPlan& plan) {
  return launch_of<ScanPlan>(plan);
}
#endif

}  // namespace hk::detail
