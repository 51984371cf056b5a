// The register limit the offload scan strategies check a thread's items against.
#pragma once

#include <cstdint>

#include "algorithms/cumulative.hpp"
#include "schedules/strategy.hpp"

namespace hk::detail {

/// Throws hk::Error(Errc::invalid_schedule) when `items` elements exceed the `max_bytes` a
/// thread holds in registers.
void check_offload_item_bytes(const CumulativeCall& call, const BoundParams& params, int items,
                              std::int64_t max_bytes);

}  // namespace hk::detail
