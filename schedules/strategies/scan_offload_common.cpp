// What the offload scan strategies check a call against: element types, register limits.
#include "schedules/strategies/scan_offload_common.hpp"

#include <string>

#include "hetkern/error.hpp"
#include "schedules/strategies/scan_host_common.hpp"

namespace hk::detail {

bool offload_scan_takes(DataType type) { return type != DataType::float64 && type != DataType::bfloat16; }

void check_offload_scan_type(const CumulativeCall& call, const Schedule& schedule) {
  const DataType t = call.input.desc.dtype();
  if (!offload_scan_takes(t))
    throw Error(Errc::invalid_schedule, call.op_name(), schedule.empty() ? "(default)" : schedule.to_string(),
                "the offload strategies take float32, float16 and the integer types, not " +
                    std::string(name_of(t)) + "; a host strategy scans it");
}

ScanPlan checked_offload_defaults(const CumulativeCall& call, const BoundParams& params, ScanPlan::Kind kind) {
  check_offload_scan_type(call, params.schedule());
  return offload_scan_defaults(call, kind);
}

int check_offload_item_bytes(const CumulativeCall& call, const BoundParams& params, int items,
                              std::int64_t max_bytes) {
  const std::int64_t element = scan_element_bytes(call);
  if (std::int64_t(items) * element > max_bytes)
    throw Error(Errc::invalid_schedule, call.op_name(), params.schedule().to_string(),
                "items = " + std::to_string(items) + " elements of " + std::to_string(element) +
                    " bytes exceed the " + std::to_string(max_bytes) + " bytes a thread holds in registers");
  return items;
}

}  // namespace hk::detail
