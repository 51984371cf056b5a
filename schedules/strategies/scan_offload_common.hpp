// What the offload scan strategies check a call against: element types, register limits.
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/cumulative.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

/// Throws hk::Error(Errc::invalid_schedule) naming `schedule_text` when the offload kernels
/// cannot take the call's element type (float64 and bfloat16 run on the host only).
void check_offload_scan_type(const CumulativeCall& call, const std::string& schedule_text);

/// Throws hk::Error(Errc::invalid_schedule) when `items` elements exceed the `max_bytes` a
/// thread holds in registers.
void check_offload_item_bytes(const CumulativeCall& call, const BoundParams& params, int items,
                              std::int64_t max_bytes);

}  // namespace hk::detail
