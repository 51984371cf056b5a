#include "bench/buffer.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace hk::bench {

constexpr std::size_t page = 4096;

void Buffer::Free::operator()(std::byte* p) const noexcept { std::free(p); }

Buffer::Buffer(std::size_t bytes, int threads) : size_(bytes) {
  const std::size_t pages = (bytes + page - 1) / page;
  data_.reset(static_cast<std::byte*>(std::aligned_alloc(page, std::max<std::size_t>(pages, 1) * page)));
  if (!data_) throw std::bad_alloc();
  std::byte* p = data_.get();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < std::int64_t(pages); ++i) std::memset(p + i * page, 0, page);
}

}  // namespace hk::bench
