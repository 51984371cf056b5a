// libhetkern_cuda.so: the CUDA driver as LLVM 19's offload runtime opens it, with one change. A
// kernel may use more than 48 KB of dynamic shared memory (team memory) only once it has opted in
// (cuFuncSetAttribute), and that runtime never opts in, so its launches of more fail. This
// library's name inside (soname) is libcuda.so, the name the runtime asks dlopen for: opened
// before the runtime starts (gpu_plugin.cpp), it is what the runtime gets. Its cuLaunchKernel opts
// a kernel in before a launch that asks for more than 48 KB; every other driver function the
// runtime looks up is the driver's own, found through this library's dependency on libcuda.so.1.
#include <dlfcn.h>

namespace {

using Result = int;  // CUresult
using Function = void*;
using Stream = void*;
using Launch = Result (*)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Stream,
                          void**, void**);
using GetAttribute = Result (*)(int*, int, Function);
using SetAttribute = Result (*)(Function, int, int);

constexpr unsigned default_limit = 48 * 1024;
constexpr int max_dynamic_shared_attribute = 8;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (cuda.h)
constexpr Result not_found = 500;                // CUDA_ERROR_NOT_FOUND

struct Driver {
  Launch launch = nullptr;
  GetAttribute get = nullptr;
  SetAttribute set = nullptr;
};

// Filled as the library loads (its dependency is loaded by then). A function-local static would
// need the C++ runtime's guards, which this library does not link, and a process whose libstdc++
// is not global (Python's, through an extension module) could not open it.
Driver driver;

__attribute__((constructor)) void find_driver() {
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    driver.launch = reinterpret_cast<Launch>(dlsym(cuda, "cuLaunchKernel"));
    driver.get = reinterpret_cast<GetAttribute>(dlsym(cuda, "cuFuncGetAttribute"));
    driver.set = reinterpret_cast<SetAttribute>(dlsym(cuda, "cuFuncSetAttribute"));
  }
}

}  // namespace

extern "C" {

// Tells hetkern that the runtime's driver is this library (cuda_launch_shim_in_use, gpu_arch.hpp).
__attribute__((visibility("default"))) extern const int hetkern_cuda_launch_shim = 1;

__attribute__((visibility("default"))) Result cuLaunchKernel(Function f, unsigned gx, unsigned gy, unsigned gz,
                                                             unsigned bx, unsigned by, unsigned bz,
                                                             unsigned shared_bytes, Stream stream, void** params,
                                                             void** extra) {
  const Driver& d = driver;
  if (!d.launch) return not_found;
  if (shared_bytes > default_limit && d.get && d.set) {
    int allowed = 0;
    if (d.get(&allowed, max_dynamic_shared_attribute, f) != 0 || unsigned(allowed) < shared_bytes)
      if (const Result r = d.set(f, max_dynamic_shared_attribute, int(shared_bytes)); r != 0) return r;
  }
  return d.launch(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

}  // extern "C"
