// detail::streaming_copy: the copy that fills the GPU staging ring and writes long copies back.
// Streaming stores cover whole 64-byte lines of the destination and memcpy the rest, so every
// placement of a copy against the lines is checked: each byte copied, none written around it.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/platform/streaming_copy.hpp"
#include "bytes_test_util.hpp"

namespace {

using hk::test::random_bytes;

constexpr std::byte guard{0xA5};

// Copies `length` bytes from `src_offset` within a random source to `dst_offset` from a 64-byte
// boundary of a guarded destination, and checks both.
void check_copy(std::size_t dst_offset, std::size_t src_offset, std::size_t length, unsigned seed) {
  const std::vector<std::byte> src = random_bytes(src_offset + length, seed);
  const std::size_t margin = 128;
  std::vector<std::byte> room(dst_offset + length + 2 * margin + 64, guard);
  const auto base = reinterpret_cast<std::uintptr_t>(room.data()) + margin;
  std::byte* const line_start = room.data() + margin + (64 - base % 64) % 64;
  std::byte* const dst = line_start + dst_offset;
  hk::detail::streaming_copy(dst, src.data() + src_offset, length);
  for (std::size_t i = 0; i < length; ++i)
    ASSERT_EQ(dst[i], src[src_offset + i]) << "byte " << i << " of " << length << " at offset " << dst_offset;
  for (std::byte* p = room.data(); p < dst; ++p) ASSERT_EQ(*p, guard) << "written before the copy";
  for (std::byte* p = dst + length; p < room.data() + room.size(); ++p) ASSERT_EQ(*p, guard) << "written after the copy";
}

TEST(StreamingCopy, EveryPlacementAgainstTheLinesMatchesTheSource) {
  const std::size_t lengths[] = {0, 1, 15, 63, 64, 65, 127, 128, 129, 191, 1000, 4096 + 13};
  unsigned seed = 1;
  for (std::size_t dst_offset = 0; dst_offset < 64; ++dst_offset)
    for (const std::size_t src_offset : {0, 1, 8, 33})
      for (const std::size_t length : lengths) check_copy(dst_offset, src_offset, length, seed++);
}

TEST(StreamingCopy, LongCopiesMatchTheSource) {
  // Several MiB, past the caches, as the staging ring's pieces and the copies back are.
  check_copy(17, 5, (std::size_t(3) << 20) + 5, 7);
  check_copy(0, 0, std::size_t(4) << 20, 8);
}

}  // namespace
