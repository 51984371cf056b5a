// Bytes that end just before a page that faults when touched: a test's proof that code reads
// nothing past the end of its operand.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace hk::test {

// `n` bytes whose last one is followed by a page that faults when touched.
class FencedBytes {
 public:
  explicit FencedBytes(std::int64_t n) {
    const std::int64_t page = sysconf(_SC_PAGESIZE);
    mapped_ = std::size_t((n + page - 1) / page * page + page);
    void* m = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) std::abort();
    base_ = static_cast<std::uint8_t*>(m);
    if (mprotect(base_ + mapped_ - std::size_t(page), std::size_t(page), PROT_NONE) != 0) std::abort();
    data_ = base_ + mapped_ - std::size_t(page) - std::size_t(n);
  }
  ~FencedBytes() { munmap(base_, mapped_); }
  FencedBytes(const FencedBytes&) = delete;
  FencedBytes& operator=(const FencedBytes&) = delete;
  std::uint8_t* data() { return data_; }

 private:
  std::uint8_t* base_ = nullptr;
  std::uint8_t* data_ = nullptr;
  std::size_t mapped_ = 0;
};

}  // namespace hk::test
