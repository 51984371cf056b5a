// The roof of a bandwidth-bound kernel: copies that move a tensor's bytes once in and once out,
// as fast as this machine allows. Not capped by hk::set_max_isa: they measure the memory, not
// hetkern's instruction set.
#pragma once

#include <cstddef>

namespace hk::bench {

/// Copies `bytes` with non-temporal (streaming) stores over whole 64-byte lines of `dst`, the
/// unaligned head and tail with memcpy, split over up to `threads` OpenMP threads.
void streaming_copy(void* dst, const void* src, std::size_t bytes, int threads);

/// memcpy of `bytes` cut into one contiguous piece per thread, over up to `threads` threads.
void parallel_memcpy(void* dst, const void* src, std::size_t bytes, int threads);

}  // namespace hk::bench
