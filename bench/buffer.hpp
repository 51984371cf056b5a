// Page-aligned benchmark memory, first touched by the threads that will use it.
#pragma once

#include <cstddef>
#include <memory>

namespace hk::bench {

class Buffer {
 public:
  /// `bytes` zeroed bytes (on huge pages from 2 MiB on, where the system allows), touched by
  /// `threads` OpenMP threads in static order so that on a multi-socket host the pages lie near
  /// the threads that later read them.
  Buffer(std::size_t bytes, int threads);

  std::byte* data() noexcept { return data_.get(); }
  const std::byte* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte[], Free> data_;
  std::size_t size_;
};

}  // namespace hk::bench
