// The CUDA driver's compute capabilities (gpu_arch.hpp), through dlopen: libhetkern and its GPU
// plugin link no CUDA library.
#include "runtime/platform/gpu_arch.hpp"

#include <dlfcn.h>

#include <mutex>
#include <vector>

namespace hk::detail {
namespace {

std::vector<int> read_capabilities() {
  std::vector<int> found;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) return found;
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  using Get = int (*)(int*, int);
  using Attribute = int (*)(int*, int, int);
  auto init = reinterpret_cast<Init>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(cuda, "cuDeviceGetCount"));
  auto get = reinterpret_cast<Get>(dlsym(cuda, "cuDeviceGet"));
  auto attribute = reinterpret_cast<Attribute>(dlsym(cuda, "cuDeviceGetAttribute"));
  constexpr int major_attribute = 75, minor_attribute = 76;  // cuda.h
  int devices = 0;
  if (!init || !count || !get || !attribute || init(0) != 0 || count(&devices) != 0) return found;
  for (int ordinal = 0; ordinal < devices; ++ordinal) {
    int device = 0, major = 0, minor = 0;
    const bool known = get(&device, ordinal) == 0 && attribute(&major, major_attribute, device) == 0 &&
                       attribute(&minor, minor_attribute, device) == 0;
    found.push_back(known ? 10 * major + minor : 0);
  }
  return found;  // the driver stays loaded: the offload runtime uses it too
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
