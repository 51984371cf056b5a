// Availability and search space shared by the offload strategies.
#include "schedules/strategies/offload_common.hpp"

#include "hetkern/device.hpp"

namespace hk::detail {

Availability offload_available() {
  // offload_on_host() opens the plugin where a GPU could run it. Without the plugin a call with an
  // offload schedule fails with its reason, so say that.
  const bool on_host = offload_on_host();
  const GpuPluginStatus plugin = gpu_plugin_status();
  if (!plugin.error.empty()) return {false, "the GPU plugin cannot be opened: " + plugin.error};
  if (on_host) return {false, "no GPU: the offload kernels run on the host fallback"};
  return {};
}

std::vector<SpaceAxis> offload_team_space() { return {{"threads", {"64", "128", "256"}}}; }

}  // namespace hk::detail
