// The CUDA driver's compute capabilities and multiprocessor counts (gpu_arch.hpp).
#include "runtime/platform/gpu_arch.hpp"

#include <mutex>
#include <vector>

#include "runtime/platform/cuda_driver.hpp"

namespace hk::detail {
namespace {

struct Facts {
  int capability = 0;      // major * 10 + minor
  int multiprocessors = 0;
};

std::vector<Facts> read_facts() {
  std::vector<Facts> found;
  using Count = int (*)(int*);
  using Get = int (*)(int*, int);
  using Attribute = int (*)(int*, int, int);
  const auto count = reinterpret_cast<Count>(cuda_driver_function("cuDeviceGetCount"));
  const auto get = reinterpret_cast<Get>(cuda_driver_function("cuDeviceGet"));
  const auto attribute = reinterpret_cast<Attribute>(cuda_driver_function("cuDeviceGetAttribute"));
  constexpr int multiprocessor_attribute = 16, major_attribute = 75, minor_attribute = 76;  // cuda.h
  int devices = 0;
  if (!count || !get || !attribute || count(&devices) != 0) return found;
  for (int ordinal = 0; ordinal < devices; ++ordinal) {
    int device = 0, major = 0, minor = 0, multiprocessors = 0;
    Facts f;
    if (get(&device, ordinal) == 0) {
      if (attribute(&major, major_attribute, device) == 0 && attribute(&minor, minor_attribute, device) == 0)
        f.capability = 10 * major + minor;
      if (attribute(&multiprocessors, multiprocessor_attribute, device) == 0) f.multiprocessors = multiprocessors;
    }
    found.push_back(f);
  }
  return found;
}

const std::vector<Facts>& facts() {
  static std::once_flag once;
  static std::vector<Facts> found;
  std::call_once(once, [] { found = read_facts(); });
  return found;
}

const Facts& facts_of(int ordinal) {
  static const Facts none;
  return ordinal >= 0 && ordinal < cuda_device_count() ? facts()[std::size_t(ordinal)] : none;
}

}  // namespace

int cuda_device_count() { return int(facts().size()); }

int cuda_compute_capability(int ordinal) { return facts_of(ordinal).capability; }

int cuda_multiprocessors(int ordinal) { return facts_of(ordinal).multiprocessors; }

}  // namespace hk::detail
