// A stand-in for the NVIDIA driver's libcuda.so.1, for test_cuda_launch_shim.py: the few functions
// the launch shim calls, recording what they were asked. Function handles are small integers; the
// one numbered 13 refuses to be opted in.
#include <cstdint>

namespace {

constexpr int max_dynamic_shared_attribute = 8;
constexpr int refusing_function = 13;
int allowed[64];          // each function's opted-in dynamic shared memory
unsigned launched[64];    // the shared memory of each function's last launch
int set_calls = 0, launches = 0, inits = 0;

int slot(void* f) { return int(reinterpret_cast<std::uintptr_t>(f) % 64); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int cuInit(unsigned) { return ++inits, 0; }

__attribute__((visibility("default"))) int cuFuncGetAttribute(int* value, int attribute, void* f) {
  if (attribute != max_dynamic_shared_attribute) return 1;
  *value = allowed[slot(f)] ? allowed[slot(f)] : 48 * 1024;
  return 0;
}

__attribute__((visibility("default"))) int cuFuncSetAttribute(void* f, int attribute, int value) {
  ++set_calls;
  if (attribute != max_dynamic_shared_attribute || slot(f) == refusing_function) return 1;
  allowed[slot(f)] = value;
  return 0;
}

__attribute__((visibility("default"))) int cuLaunchKernel(void* f, unsigned, unsigned, unsigned, unsigned, unsigned,
                                                          unsigned, unsigned shared, void*, void**, void**) {
  if (shared > 48 * 1024 && unsigned(allowed[slot(f)]) < shared) return 1;  // as the real driver refuses
  ++launches;
  launched[slot(f)] = shared;
  return 0;
}

__attribute__((visibility("default"))) int fake_set_calls() { return set_calls; }
__attribute__((visibility("default"))) int fake_launches() { return launches; }
__attribute__((visibility("default"))) int fake_inits() { return inits; }
__attribute__((visibility("default"))) unsigned fake_launched(int f) { return launched[f % 64]; }

}  // extern "C"
