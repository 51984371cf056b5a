// What the offload scan strategies share: the checks of a call (element types, register limits),
// their defaults and their run().
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/cumulative.hpp"
#include "hetkern/device.hpp"
#include "schedules/scan_offload.hpp"
#include "schedules/scan_strategies.hpp"
#include "schedules/strategies/offload_common.hpp"
#include "schedules/strategies/scan_host_chunks.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

/// Whether the offload kernels take elements of `type` (float64 and bfloat16 run on the host only).
bool offload_scan_takes(DataType type);

/// Throws hk::Error(Errc::invalid_schedule) naming `schedule` ("(default)" when empty) when the
/// offload kernels cannot take the call's element type.
void check_offload_scan_type(const CumulativeCall& call, const Schedule& schedule);

/// The defaults of the offload strategy of `kind` for a call whose element type it takes
/// (checked as check_offload_scan_type does, naming the schedule of `params`).
ScanPlan checked_offload_defaults(const CumulativeCall& call, const BoundParams& params, ScanPlan::Kind kind);

/// `items`, checked: throws hk::Error(Errc::invalid_schedule) when `items` elements exceed the
/// `max_bytes` a thread holds in registers.
int check_offload_item_bytes(const CumulativeCall& call, const BoundParams& params, int items,
                              std::int64_t max_bytes);

/// The record of the offload strategy whose plan is `Plan` (its launch() and schedule()): the
/// fields particular to it, and what every offload strategy shares (run on host tensors through
/// run_scan_offload_host_chunked, available where there is a GPU; the team-size space unless it
/// gives its own).
template <class Plan>
ScanStrategy offload_scan_record(const char* name, const char* meaning, std::vector<ParamSpec> params,
                                 ScanStrategyPlan (*plan)(const CumulativeCall&, const BoundParams&),
                                 SearchSpace (*space)(const CumulativeCall&) = offload_space<CumulativeCall>) {
  return {
      .name = name,
      .meaning = meaning,
      .params = std::move(params),
      .plan = plan,
      .run = [](const CumulativeCall& call, const ScanStrategyPlan& p) {
        run_scan_offload_host_chunked(call, std::get<Plan>(p).launch(), offload_device());
      },
      .schedule = [](const ScanStrategyPlan& p) { return std::get<Plan>(p).schedule(); },
      .space = space,
      .available = offload_available,
  };
}

}  // namespace hk::detail
