// Page-locked host memory, asked of the CUDA driver (page_locked.hpp).
#include "runtime/platform/page_locked.hpp"

#include <cstdint>

#include "runtime/platform/cuda_driver.hpp"

namespace hk::detail {
namespace {

using Context = void*;
constexpr int memory_type_attribute = 2, buffer_id_attribute = 7;  // CUpointer_attribute (cuda.h)
constexpr unsigned host_memory = 1;                                  // CU_MEMORYTYPE_HOST

struct Driver {
  int (*attribute)(void*, int, unsigned long long);
  int (*current)(Context*);
  int (*get)(int*, int);
  int (*retain)(Context*, int);
  int (*release)(int);
  int (*push)(Context);
  int (*pop)(Context*);
  bool usable() const { return attribute && current && get && retain && release && push && pop; }
};

const Driver& driver() {
  static const Driver d{
      reinterpret_cast<decltype(Driver::attribute)>(cuda_driver_function("cuPointerGetAttribute")),
      reinterpret_cast<decltype(Driver::current)>(cuda_driver_function("cuCtxGetCurrent")),
      reinterpret_cast<decltype(Driver::get)>(cuda_driver_function("cuDeviceGet")),
      reinterpret_cast<decltype(Driver::retain)>(cuda_driver_function("cuDevicePrimaryCtxRetain")),
      reinterpret_cast<decltype(Driver::release)>(cuda_driver_function("cuDevicePrimaryCtxRelease_v2")),
      reinterpret_cast<decltype(Driver::push)>(cuda_driver_function("cuCtxPushCurrent_v2")),
      reinterpret_cast<decltype(Driver::pop)>(cuda_driver_function("cuCtxPopCurrent_v2"))};
  return d;
}

// The allocation `address` lies in, when it is page-locked host memory: its buffer id.
bool page_locked_buffer(const Driver& d, std::uintptr_t address, unsigned long long& id) {
  unsigned type = 0;
  return d.attribute(&type, memory_type_attribute, address) == 0 && type == host_memory &&
         d.attribute(&id, buffer_id_attribute, address) == 0;
}

}  // namespace

bool host_range_page_locked(const void* data, std::size_t bytes) {
  const Driver& d = driver();
  if (!data || bytes == 0 || !d.usable()) return false;
  // The driver answers only on a thread with a current context, which the offload runtime sets on
  // the threads it copies from; elsewhere GPU 0's primary context (page-locked memory is the same
  // to every context of the process) is current for the question.
  Context current = nullptr;
  if (d.current(&current) != 0) return false;
  int device = 0;
  const bool borrowed = !current;
  if (borrowed && (d.get(&device, 0) != 0 || d.retain(&current, device) != 0)) return false;
  if (borrowed && d.push(current) != 0) {
    d.release(device);
    return false;
  }
  const auto first = reinterpret_cast<std::uintptr_t>(data);
  unsigned long long first_id = 0, last_id = 0;
  const bool locked = page_locked_buffer(d, first, first_id) && page_locked_buffer(d, first + bytes - 1, last_id) &&
                      first_id == last_id;
  if (borrowed) {
    Context popped = nullptr;
    d.pop(&popped);
    d.release(device);
  }
  return locked;
}

}  // namespace hk::detail
