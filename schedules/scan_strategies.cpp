// Planning a cumulative call from schedule text through the strategy list.
#include "schedules/scan_strategies.hpp"

namespace hk::detail {

ScanStrategyPlan plan_scan(const CumulativeCall& call, const Schedule& schedule) {
  BoundParams params(schedule, {});
  return find_strategy(call.op_name(), scan_strategies(), params).plan(call, params);
}

#ifdef HETKERN_OFFLOAD
std::optional<ScanPlan> offload_launch(const ScanStrategyPlan& plan) {
  return std::visit(
      [](const auto& p) -> std::optional<ScanPlan> {
        if constexpr (requires { p.launch(); })
          return p.launch();
        else
          return std::nullopt;
      },
      plan);
}

Schedule ScanPlan::to_schedule() const {
  switch (kind) {
    case Kind::offload_rows: return detail::to_schedule(OffloadRowsScanPlan{teams, threads, items, ahead});
    case Kind::offload_columns:
      return detail::to_schedule(OffloadColumnsScanPlan{teams, threads, chunks, items, width});
    case Kind::offload_chained: return detail::to_schedule(OffloadChainedScanPlan{teams, threads, items});
    case Kind::reference:
    case Kind::tiled:
    case Kind::parallel:
    case Kind::blocked: break;
  }
  return Schedule(scan_strategies()[std::size_t(kind)]->name);
}
#endif

}  // namespace hk::detail
