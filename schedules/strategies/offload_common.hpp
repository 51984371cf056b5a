// What every offload strategy shares: where it is available and the team sizes the tuner tries.
#pragma once

#include <vector>

#include "schedules/strategy.hpp"

namespace hk::detail {

/// Available where there is a GPU; elsewhere the kernels run on the host fallback.
Availability offload_available();

/// Team sizes of whole warps around the best measured on an H100; the other parameters keep
/// their shape-derived defaults.
std::vector<SpaceAxis> offload_team_space();

/// An offload record's `space`: the team sizes, whatever the call.
template <class Call> SearchSpace offload_space(const Call&) { return offload_team_space(); }

}  // namespace hk::detail
