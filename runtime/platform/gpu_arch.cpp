// The CUDA driver's compute capabilities (gpu_arch.hpp).
#include "runtime/platform/gpu_arch.hpp"

#include <mutex>
#include <vector>

#include "runtime/platform/cuda_driver.hpp"

namespace hk::detail {
namespace {

std::vector<int> read_capabilities() {
  std::vector<int> found;
  using Count = int (*)(int*);
  using Get = int (*)(int*, int);
  using Attribute = int (*)(int*, int, int);
  const auto count = reinterpret_cast<Count>(cuda_driver_function("cuDeviceGetCount"));
  const auto get = reinterpret_cast<Get>(cuda_driver_function("cuDeviceGet"));
  const auto attribute = reinterpret_cast<Attribute>(cuda_driver_function("cuDeviceGetAttribute"));
  constexpr int major_attribute = 75, minor_attribute = 76;  // cuda.h
  int devices = 0;
  if (!count || !get || !attribute || count(&devices) != 0) return found;
  for (int ordinal = 0; ordinal < devices; ++ordinal) {
    int device = 0, major = 0, minor = 0;
    const bool known = get(&device, ordinal) == 0 && attribute(&major, major_attribute, device) == 0 &&
                       attribute(&minor, minor_attribute, device) == 0;
    found.push_back(known ? 10 * major + minor : 0);
  }
  return found;
}

const std::vector<int>& capabilities() {
  static std::once_flag once;
  static std::vector<int> found;
  std::call_once(once, [] { found = read_capabilities(); });
  return found;
}

}  // namespace

int cuda_device_count() { return int(capabilities().size()); }

int cuda_compute_capability(int ordinal) {
  return ordinal >= 0 && ordinal < cuda_device_count() ? capabilities()[std::size_t(ordinal)] : 0;
}

}  // namespace hk::detail
