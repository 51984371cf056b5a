// The CUDA driver through dlopen (cuda_driver.hpp).
#include "runtime/platform/cuda_driver.hpp"

#include <dlfcn.h>

namespace hk::detail {

void* cuda_driver_function(const char* name) {
  static void* const driver = []() -> void* {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda) return nullptr;
    const auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(cuda, "cuInit"));
    return init && init(0) == 0 ? cuda : nullptr;
  }();
  return driver ? dlsym(driver, name) : nullptr;
}

}  // namespace hk::detail
