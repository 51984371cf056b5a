// Whether host memory is page-locked (cudaHostAlloc, cudaHostRegister, PyTorch's pin_memory(),
// llvm_omp_target_alloc_host): a GPU's copy engines read and write such memory directly, at the
// link's speed, so that copies of it need no staging through hetkern's own page-locked buffers
// (pinned_staging.hpp), which cost the host's memory two more passes over every byte.
#pragma once

#include <cstddef>

namespace hk::detail {

/// True when every byte of [data, data + bytes) lies in one page-locked allocation known to the
/// CUDA driver; false for pageable memory, an empty range, without a CUDA driver, or while no GPU
/// context has been started in the process (none is started to answer).
bool host_range_page_locked(const void* data, std::size_t bytes);

/// `bytes` of page-locked host memory from the CUDA driver (cuMemHostAlloc), freed with the
/// object, which holds GPU 0's primary context meanwhile (starting it if need be); data() is null
/// without a CUDA driver or when the driver refuses.
class PageLockedHost {
 public:
  explicit PageLockedHost(std::size_t bytes);
  ~PageLockedHost();
  PageLockedHost(const PageLockedHost&) = delete;
  PageLockedHost& operator=(const PageLockedHost&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  int device_ = 0;
  bool retained_ = false;
};

}  // namespace hk::detail
