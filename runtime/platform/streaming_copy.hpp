// Copies with non-temporal (streaming) stores: the destination's cache lines are written without
// being read first and bypass the caches, for copies that nobody reads again soon.
#pragma once

#include <cstddef>

namespace hk::detail {

/// Copies `bytes` with streaming stores over whole 64-byte lines of `dst`, with the widest vectors
/// the CPU has (not capped by hk::set_max_isa: a copy measures the memory, not arithmetic), the
/// unaligned head and tail with memcpy; the stores are fenced before it returns.
void streaming_copy(void* dst, const void* src, std::size_t bytes);

}  // namespace hk::detail
