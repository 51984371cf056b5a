// Page-aligned benchmark memory, first touched by its threads (buffer.hpp).
#include "bench/buffer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace hk::bench {

constexpr std::size_t page = 4096, huge_page = 2 << 20;

void Buffer::Free::operator()(std::byte* p) const noexcept { std::free(p); }

Buffer::Buffer(std::size_t bytes, int threads) : size_(bytes) {
  const std::size_t pages = (bytes + page - 1) / page;
  const std::size_t alignment = bytes >= huge_page ? huge_page : page;
  const std::size_t rounded = std::max<std::size_t>((bytes + alignment - 1) / alignment, 1) * alignment;
  data_.reset(static_cast<std::byte*>(std::aligned_alloc(alignment, rounded)));
  if (!data_) throw std::bad_alloc();
  // Transparent huge pages where the system offers them on request: fewer TLB misses and page
  // faults, so repeated runs of a large case vary less. Without them the buffer works as well.
  if (alignment == huge_page) madvise(data_.get(), rounded, MADV_HUGEPAGE);
  std::byte* p = data_.get();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t i = 0; i < std::int64_t(pages); ++i) std::memset(p + i * page, 0, page);
}

}  // namespace hk::bench
