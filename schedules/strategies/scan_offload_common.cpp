// The register limit of the offload scan strategies.
#include "schedules/strategies/scan_offload_common.hpp"

#include <string>

#include "hetkern/error.hpp"
#include "schedules/strategies/scan_host_common.hpp"

namespace hk::detail {

void check_offload_item_bytes(const CumulativeCall& call, const BoundParams& params, int items,
                              std::int64_t max_bytes) {
  const std::int64_t element = scan_element_bytes(call);
  if (std::int64_t(items) * element > max_bytes)
    throw Error(Errc::invalid_schedule, call.op_name(), params.schedule().to_string(),
                "items = " + std::to_string(items) + " elements of " + std::to_string(element) +
                    " bytes exceed the " + std::to_string(max_bytes) + " bytes a thread holds in registers");
}

}  // namespace hk::detail
