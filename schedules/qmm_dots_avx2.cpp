// The AVX2 dots kernel: A' rows against B's contiguous columns, 16 depths at a time widened to
// int16 and summed in pairs by vpmaddwd (255 * 128 * 2 < 2^31: exact for every input).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "schedules/qmm_kernels.hpp"
#include "schedules/qmm_tail_bytes.hpp"

#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)

namespace hk::detail {
namespace {

template <int C>
void store_sums(std::int32_t* dst, const __m256i (&v)[C], bool accumulate) {
  // Lanes 0 and 1 of the result: the sums of v[0]'s and v[1]'s eight lanes.
  const __m256i pairs = _mm256_hadd_epi32(v[0], C > 1 ? v[1] : _mm256_setzero_si256());
  const __m256i quads = _mm256_hadd_epi32(pairs, pairs);
  const __m128i both = _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256(quads, 1));
  const std::int32_t lanes[2] = {_mm_cvtsi128_si32(both), _mm_extract_epi32(both, 1)};
  for (int j = 0; j < C; ++j) dst[j] = accumulate ? dst[j] + lanes[j] : lanes[j];
}

// R rows x C columns, and with Sums the columns' sums; 4 x 2 keeps the accumulators, the columns
// and the constants within the 16 registers.
template <int R, int C, bool Sums>
void dots_tile(const QmmDotsTile& t, std::int64_t r0, std::int64_t j0) {
  __m256i acc[R > 0 ? R : 1][C], sums[C];
  for (int j = 0; j < C; ++j) {
    sums[j] = _mm256_setzero_si256();
    for (int i = 0; i < R; ++i) acc[i][j] = _mm256_setzero_si256();
  }
  const __m128i flip = _mm_set1_epi8(char(t.flip));
  const __m256i ones = _mm256_set1_epi16(1);
  const std::uint8_t* a = t.a + r0 * t.lda;
  const std::uint8_t* b = t.b + j0 * t.ldb;
  const auto step = [&](auto load, __m128i flip_bits, std::int64_t k) {
    __m256i bv[C];
    for (int j = 0; j < C; ++j) {
      bv[j] = _mm256_cvtepi8_epi16(_mm_xor_si128(load(b + j * t.ldb + k), flip_bits));
      if constexpr (Sums) sums[j] = _mm256_add_epi32(sums[j], _mm256_madd_epi16(bv[j], ones));
    }
    for (int i = 0; i < R; ++i) {
      const __m256i av = _mm256_cvtepu8_epi16(load(a + i * t.lda + k));
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(av, bv[j]));
    }
  };
  std::int64_t k = 0;
  for (; k + 16 <= t.depth; k += 16)
    step([](const std::uint8_t* s) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)); }, flip, k);
  if (k < t.depth) {
    // The last depths copied aside, zero beyond them (the flip too, so that B' is 0 there).
    const std::int64_t left = t.depth - k;
    step([left](const std::uint8_t* s) { return load_first(s, left); }, _mm_and_si128(flip, first_bytes_mask(left)), k);
  }
  for (int i = 0; i < R; ++i) store_sums<C>(t.c + (r0 + i) * t.ldc + j0, acc[i], t.accumulate);
  if constexpr (Sums) store_sums<C>(t.col_sums + j0, sums, t.accumulate);
}

#include "schedules/qmm_dots_walk.inc"

}  // namespace

void qmm_dots_avx2(const QmmDotsTile& t) { dots_walk<4, 4, 2>(t); }

}  // namespace hk::detail

#pragma clang attribute pop
