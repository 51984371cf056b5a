// Page-locked host memory from the offload runtime (cuMemAllocHost): host tensors that a GPU reads
// and writes directly, which the library copies without staging (offload builds, benchmarks).
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>

extern "C" void* llvm_omp_target_alloc_host(std::size_t bytes, int device);
extern "C" void llvm_omp_target_free_host(void* ptr, int device);

namespace hk::bench {

/// `count` elements of T in page-locked host memory (uninitialized); exits when none can be had.
template <class T> class PageLocked {
 public:
  explicit PageLocked(std::size_t count) : count_(count) {
    data_ = static_cast<T*>(llvm_omp_target_alloc_host(count * sizeof(T), 0));
    if (!data_) {
      std::fprintf(stderr, "cannot allocate %zu bytes of page-locked host memory\n", count * sizeof(T));
      std::exit(1);
    }
  }
  ~PageLocked() { llvm_omp_target_free_host(data_, 0); }
  PageLocked(const PageLocked&) = delete;
  PageLocked& operator=(const PageLocked&) = delete;
  T* data() const { return data_; }
  std::size_t size() const { return count_; }

 private:
  std::size_t count_;
  T* data_;
};

}  // namespace hk::bench
