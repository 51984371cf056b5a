// The CUDA driver's compute capabilities and multiprocessor counts (gpu_arch.hpp).
#include "runtime/platform/gpu_arch.hpp"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "runtime/platform/cuda_driver.hpp"

namespace hk::detail {
namespace {

struct Facts {
  int capability = 0;      // major * 10 + minor
  int multiprocessors = 0;
  int team_memory_opt_in = 0;  // bytes of shared memory a block may have once its kernel opts in
};

std::vector<Facts> read_facts() {
  std::vector<Facts> found;
  using Count = int (*)(int*);
  using Get = int (*)(int*, int);
  using Attribute = int (*)(int*, int, int);
  const auto count = reinterpret_cast<Count>(cuda_driver_function("cuDeviceGetCount"));
  const auto get = reinterpret_cast<Get>(cuda_driver_function("cuDeviceGet"));
  const auto attribute = reinterpret_cast<Attribute>(cuda_driver_function("cuDeviceGetAttribute"));
  constexpr int multiprocessor_attribute = 16, major_attribute = 75, minor_attribute = 76,
                opt_in_attribute = 97;  // cuda.h
  int devices = 0;
  if (!count || !get || !attribute || count(&devices) != 0) return found;
  for (int ordinal = 0; ordinal < devices; ++ordinal) {
    int device = 0, major = 0, minor = 0, multiprocessors = 0;
    Facts f;
    if (get(&device, ordinal) == 0) {
      if (attribute(&major, major_attribute, device) == 0 && attribute(&minor, minor_attribute, device) == 0)
        f.capability = 10 * major + minor;
      if (attribute(&multiprocessors, multiprocessor_attribute, device) == 0) f.multiprocessors = multiprocessors;
      if (int bytes = 0; attribute(&bytes, opt_in_attribute, device) == 0) f.team_memory_opt_in = bytes;
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

bool cuda_launch_shim_in_use() {
  // Once true it stays so (the runtime never lets its driver go); false is asked again, since the
  // runtime may not have opened its driver yet.
  static std::atomic<bool> in_use{false};
  if (in_use.load(std::memory_order_relaxed)) return true;
  void* runtime_driver = dlopen("libcuda.so", RTLD_LAZY | RTLD_NOLOAD);
  if (!runtime_driver) return false;
  const bool shim = dlsym(runtime_driver, "hetkern_cuda_launch_shim") != nullptr;
  dlclose(runtime_driver);
  if (shim) in_use.store(true, std::memory_order_relaxed);
  return shim;
}

int cuda_team_memory_limit(int ordinal) {
  constexpr int without_opt_in = 48 * 1024;
  const int opt_in = facts_of(ordinal).team_memory_opt_in;
  return opt_in > without_opt_in && cuda_launch_shim_in_use() ? opt_in : without_opt_in;
}

}  // namespace hk::detail
