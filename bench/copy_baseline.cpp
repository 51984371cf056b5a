// The copy roof of the bandwidth-bound benchmarks (copy_baseline.hpp).
#include "bench/copy_baseline.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "runtime/platform/streaming_copy.hpp"

namespace hk::bench {
namespace {

constexpr std::size_t line = 64;
// Below this many bytes per thread, starting another thread costs more than it saves.
constexpr std::size_t min_bytes_per_thread = 256 * 1024;

int useful_threads(std::size_t bytes, int threads) {
  return int(std::clamp<std::size_t>(bytes / min_bytes_per_thread, 1, std::size_t(threads)));
}

// Calls piece(begin_line, end_line) for an even share of `lines` on each of `threads` threads.
template <class Piece>
void split_lines(std::size_t lines, int threads, const Piece& piece) {
  if (threads == 1) return piece(std::size_t(0), lines);
#pragma omp parallel num_threads(threads)
  {
    const auto t = std::size_t(omp_get_thread_num()), n = std::size_t(omp_get_num_threads());
    piece(lines * t / n, lines * (t + 1) / n);
  }
}

}  // namespace

void streaming_copy(void* dst, const void* src, std::size_t bytes, int threads) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  const std::size_t head = std::min(bytes, (line - reinterpret_cast<std::uintptr_t>(d) % line) % line);
  const std::size_t lines = (bytes - head) / line;
  const std::size_t tail = bytes - head - lines * line;
  std::memcpy(d, s, head);
  // Each thread's whole lines, fenced before the join.
  split_lines(lines, useful_threads(bytes, threads), [&](std::size_t begin, std::size_t end) {
    detail::streaming_copy(d + head + begin * line, s + head + begin * line, (end - begin) * line);
  });
  std::memcpy(d + head + lines * line, s + head + lines * line, tail);
}

void parallel_memcpy(void* dst, const void* src, std::size_t bytes, int threads) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  const std::size_t lines = (bytes + line - 1) / line;
  split_lines(lines, useful_threads(bytes, threads), [&](std::size_t begin, std::size_t end) {
    const std::size_t from = begin * line, to = std::min(end * line, bytes);
    if (to > from) std::memcpy(d + from, s + from, to - from);
  });
}

}  // namespace hk::bench
