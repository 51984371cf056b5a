// The last bytes of a row or column shorter than a 16-byte vector, read without touching memory
// past them: B's packing (qmm_pack.cpp) and the AVX2 dots kernel (qmm_dots_avx2.cpp).
#pragma once

#include <emmintrin.h>

#include <cstdint>
#include <cstring>

namespace hk::detail {

// The first `count` bytes at `src` (count <= 16), the rest zero, without reading past them.
inline __m128i load_first(const std::uint8_t* src, std::int64_t count) {
  alignas(16) std::uint8_t part[16] = {};
  std::memcpy(part, src, std::size_t(count));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(part));
}

// Byte i is 0xFF for i < count, else 0.
inline __m128i first_bytes_mask(std::int64_t count) {
  alignas(16) static constexpr std::uint8_t ones_then_zeros[32] = {
      0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(ones_then_zeros + 16 - count));
}

}  // namespace hk::detail
