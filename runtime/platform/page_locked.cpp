// Page-locked host memory, asked of and allocated by the CUDA driver (page_locked.hpp).
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
  int (*host_alloc)(void**, std::size_t, unsigned);
  int (*host_free)(void*);
  int (*current)(Context*);
  int (*get)(int*, int);
  int (*state)(int, unsigned*, int*);
  int (*retain)(Context*, int);
  int (*release)(int);
  int (*push)(Context);
  int (*pop)(Context*);
  bool usable() const {
    return attribute && host_alloc && host_free && current && get && state && retain && release && push && pop;
  }
};

const Driver& driver() {
  static const Driver d{
      reinterpret_cast<decltype(Driver::attribute)>(cuda_driver_function("cuPointerGetAttribute")),
      reinterpret_cast<decltype(Driver::host_alloc)>(cuda_driver_function("cuMemHostAlloc")),
      reinterpret_cast<decltype(Driver::host_free)>(cuda_driver_function("cuMemFreeHost")),
      reinterpret_cast<decltype(Driver::current)>(cuda_driver_function("cuCtxGetCurrent")),
      reinterpret_cast<decltype(Driver::get)>(cuda_driver_function("cuDeviceGet")),
      reinterpret_cast<decltype(Driver::state)>(cuda_driver_function("cuDevicePrimaryCtxGetState")),
      reinterpret_cast<decltype(Driver::retain)>(cuda_driver_function("cuDevicePrimaryCtxRetain")),
      reinterpret_cast<decltype(Driver::release)>(cuda_driver_function("cuDevicePrimaryCtxRelease_v2")),
      reinterpret_cast<decltype(Driver::push)>(cuda_driver_function("cuCtxPushCurrent_v2")),
      reinterpret_cast<decltype(Driver::pop)>(cuda_driver_function("cuCtxPopCurrent_v2"))};
  return d;
}

// A current context for the driver calls below, which need one: the thread's own (the offload
// runtime sets it on the threads it copies from), else GPU 0's primary context while this lives
// (page-locked memory is the same to every context of the process), only when something (the
// offload runtime, PyTorch, a PageLockedHost) has started that context: a question about host
// memory must not start a GPU in a process that never used one.
class CurrentContext {
 public:
  explicit CurrentContext(const Driver& d) : d_(d) {
    Context current = nullptr;
    if (!d.usable() || d.current(&current) != 0) return;
    if (current) {
      ready_ = true;
      return;
    }
    unsigned flags = 0;
    int active = 0;
    if (d.get(&device_, 0) != 0 || d.state(device_, &flags, &active) != 0 || !active ||
        d.retain(&current, device_) != 0)
      return;
    retained_ = true;
    pushed_ = ready_ = d.push(current) == 0;
  }
  ~CurrentContext() {
    Context popped = nullptr;
    if (pushed_) d_.pop(&popped);
    if (retained_) d_.release(device_);
  }
  CurrentContext(const CurrentContext&) = delete;
  CurrentContext& operator=(const CurrentContext&) = delete;
  explicit operator bool() const { return ready_; }

 private:
  const Driver& d_;
  int device_ = 0;
  bool retained_ = false, pushed_ = false, ready_ = false;
};

// The allocation `address` lies in, when it is page-locked host memory: its buffer id.
bool page_locked_buffer(const Driver& d, std::uintptr_t address, unsigned long long& id) {
  unsigned type = 0;
  return d.attribute(&type, memory_type_attribute, address) == 0 && type == host_memory &&
         d.attribute(&id, buffer_id_attribute, address) == 0;
}

}  // namespace

bool host_range_page_locked(const void* data, std::size_t bytes) {
  if (!data || bytes == 0) return false;
  const Driver& d = driver();
  const CurrentContext context(d);
  if (!context) return false;
  const auto first = reinterpret_cast<std::uintptr_t>(data);
  unsigned long long first_id = 0, last_id = 0;
  return page_locked_buffer(d, first, first_id) && page_locked_buffer(d, first + bytes - 1, last_id) &&
         first_id == last_id;
}

PageLockedHost::PageLockedHost(std::size_t bytes) {
  const Driver& d = driver();
  // Page-locked memory belongs to a context: GPU 0's primary context is held while it lives.
  Context primary = nullptr;
  if (bytes == 0 || !d.usable() || d.get(&device_, 0) != 0 || d.retain(&primary, device_) != 0) return;
  retained_ = true;
  const CurrentContext context(d);
  if (!context || d.host_alloc(&data_, bytes, 0) != 0) data_ = nullptr;
}

PageLockedHost::~PageLockedHost() {
  const Driver& d = driver();
  if (data_) {
    const CurrentContext context(d);
    d.host_free(data_);
  }
  if (retained_) d.release(device_);
}

}  // namespace hk::detail
