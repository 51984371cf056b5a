// Availability and search space shared by the offload strategies.
#include "schedules/strategies/offload_common.hpp"

#include "hetkern/device.hpp"

namespace hk::detail {

Availability offload_available() {
  if (offload_on_host()) return {false, "no GPU: the offload kernels run on the host fallback"};
  return {};
}

std::vector<SpaceAxis> offload_team_space() { return {{"threads", {"64", "128", "256"}}}; }

}  // namespace hk::detail
