// Availability and search space shared by the offload strategies.
#include "schedules/strategies/offload_common.hpp"

#include "hetkern/device.hpp"
#include "runtime/platform/gpu_arch.hpp"

namespace hk::detail {

Availability offload_available() {
  if (offload_on_host()) return {false, "no GPU: the offload kernels run on the host fallback"};
  return {};
}

std::vector<SpaceAxis> offload_team_space() { return {{"threads", {"64", "128", "256"}}}; }

// OpenMP numbers the GPUs as CUDA does; the host fallback's number names no CUDA device.
bool offload_device_has_wgmma() { return cuda_compute_capability(offload_device()) == 90; }

}  // namespace hk::detail
