// The AVX2 QuantizedLinearMatMul kernels: vpmaddubsw where packing proved it exact, otherwise
// products of operands widened to int16, summed by vpmaddwd (255 * 128 * 2 < 2^31: always exact).
#include <immintrin.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "schedules/qmm_kernels.hpp"

#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)

namespace hk::detail {
namespace {

inline __m256i broadcast_group(const std::uint8_t* a) {
  std::int32_t v;
  std::memcpy(&v, a, 4);
  return _mm256_set1_epi32(v);
}

// MR rows x 16 columns (one panel, two ymm of 8 columns x 4 depths).
template <int MR>
void maddubs_tile(const QmmTile& t, std::int64_t r0, std::int64_t p) {
  __m256i acc[MR][2];
  for (int i = 0; i < MR; ++i)
    for (int h = 0; h < 2; ++h) acc[i][h] = _mm256_setzero_si256();
  const __m256i ones = _mm256_set1_epi16(1);
  const std::uint8_t* a = t.a + r0 * t.lda;
  const std::int8_t* b = t.b + p * t.panel_bytes;
  for (std::int64_t g = 0; g < t.groups; ++g) {
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + g * 64));
    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + g * 64 + 32));
    for (int i = 0; i < MR; ++i) {
      const __m256i av = broadcast_group(a + i * t.lda + g * 4);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int h = 0; h < 2; ++h) {
      auto* c = reinterpret_cast<__m256i*>(t.c + (r0 + i) * t.ldc + p * 16 + h * 8);
      _mm256_store_si256(c, t.accumulate ? _mm256_add_epi32(_mm256_load_si256(c), acc[i][h]) : acc[i][h]);
    }
}

// MR rows x 8 columns (half a panel), from A' rows widened to int16 beforehand (`wide`, `depth`
// a row): a group's four depths of a row load as one broadcast, leaving the shuffle port to B's
// widening. Each ymm of products holds, per column, the sums of the depth pairs (0,1) and (2,3);
// they are added at the end.
template <int MR>
void exact_tile(const QmmTile& t, const std::int16_t* wide, std::int64_t depth, std::int64_t r0, std::int64_t p,
                int half) {
  __m256i lo[MR], hi[MR];
  for (int i = 0; i < MR; ++i) lo[i] = hi[i] = _mm256_setzero_si256();
  const std::int16_t* a = wide + r0 * depth;
  const std::int8_t* b = t.b + p * t.panel_bytes + half * 32;
  for (std::int64_t g = 0; g < t.groups; ++g) {
    const __m128i raw0 = _mm_load_si128(reinterpret_cast<const __m128i*>(b + g * 64));
    const __m128i raw1 = _mm_load_si128(reinterpret_cast<const __m128i*>(b + g * 64 + 16));
    const __m256i b0 = _mm256_cvtepi8_epi16(raw0);  // columns 0-3
    const __m256i b1 = _mm256_cvtepi8_epi16(raw1);  // columns 4-7
    for (int i = 0; i < MR; ++i) {
      std::int64_t four;
      std::memcpy(&four, a + i * depth + g * 4, 8);
      const __m256i av = _mm256_set1_epi64x(four);
      lo[i] = _mm256_add_epi32(lo[i], _mm256_madd_epi16(av, b0));
      hi[i] = _mm256_add_epi32(hi[i], _mm256_madd_epi16(av, b1));
    }
  }
  for (int i = 0; i < MR; ++i) {
    // hadd per 128-bit lane gives columns {0,1,4,5 | 2,3,6,7}; the permute restores 0..7.
    const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo[i], hi[i]), 0xD8);
    auto* c = reinterpret_cast<__m256i*>(t.c + (r0 + i) * t.ldc + p * 16 + half * 8);
    _mm256_store_si256(c, t.accumulate ? _mm256_add_epi32(_mm256_load_si256(c), sums) : sums);
  }
}

// `tile` over the rows, Rows at a time, then once over the rows left (1 to Rows - 1).
template <int Rows, class Tile>
void for_row_blocks(const QmmTile& t, Tile&& tile) {
  std::int64_t r = 0;
  for (; r + Rows <= t.rows; r += Rows) tile(std::integral_constant<int, Rows>{}, r);
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((t.rows - r == I + 1 ? tile(std::integral_constant<int, I + 1>{}, r) : void()), ...);
  }(std::make_integer_sequence<int, Rows - 1>{});
}

}  // namespace

void qmm_kernel_avx2_maddubs(const QmmTile& t) {
  for (std::int64_t p = 0; p < t.panels; ++p)
    for_row_blocks<4>(t, [&](auto mr, std::int64_t r) { maddubs_tile<decltype(mr)::value>(t, r, p); });
}

// A' is widened once a call, not once a half panel in the loop; with no register left to widen
// A, tiles of 6 rows fit the 16 (12 accumulators, B's two halves and A's broadcast;
// docs/performance.md, the exact AVX2 kernel on A' widened once).
void qmm_kernel_avx2_exact(const QmmTile& t) {
  thread_local std::vector<std::int16_t> wide;
  const std::int64_t depth = t.groups * 4;  // a multiple of 64
  wide.resize(std::size_t(t.rows * depth));
  for (std::int64_t r = 0; r < t.rows; ++r)
    for (std::int64_t k = 0; k < depth; k += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.a + r * t.lda + k));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(wide.data() + r * depth + k), _mm256_cvtepu8_epi16(bytes));
    }
  for (std::int64_t p = 0; p < t.panels; ++p)
    for (int half = 0; half < 2; ++half)
      for_row_blocks<6>(t, [&](auto mr, std::int64_t r) {
        exact_tile<decltype(mr)::value>(t, wide.data(), depth, r, p, half);
      });
}

}  // namespace hk::detail

#pragma clang attribute pop
