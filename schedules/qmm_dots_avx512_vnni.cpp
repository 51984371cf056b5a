// The AVX-512 VNNI dots kernel: A' rows against B's contiguous columns, 64 depths per vpdpbusd
// (exact, as in the packed kernel), each output the sum of one accumulator's lanes at the end.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "schedules/qmm_kernels.hpp"

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vnni,bmi2"))), apply_to = function)

namespace hk::detail {
namespace {

// The sums of the 16 lanes of each of v0..v3, as the four lanes of one xmm.
inline __m128i lane_sums(__m512i v0, __m512i v1, __m512i v2, __m512i v3) {
  const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(v0, v1), _mm512_unpackhi_epi32(v0, v1));
  const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(v2, v3), _mm512_unpackhi_epi32(v2, v3));
  const __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
  const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

template <int C>
void store_sums(std::int32_t* dst, const __m512i (&v)[C], bool accumulate) {
  const __m512i zero = _mm512_setzero_si512();
  const auto at = [&](int j) { return j < C ? v[j] : zero; };
  alignas(16) std::int32_t lanes[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), lane_sums(at(0), at(1), at(2), at(3)));
  if constexpr (C > 4) _mm_store_si128(reinterpret_cast<__m128i*>(lanes + 4), lane_sums(at(4), at(5), at(6), at(7)));
  for (int j = 0; j < C; ++j) dst[j] = accumulate ? dst[j] + lanes[j] : lanes[j];
}

// R rows x C columns, and with Sums the columns' sums (one more vpdpbusd per column, by ones).
template <int R, int C, bool Sums>
void dots_tile(const QmmDotsTile& t, std::int64_t r0, std::int64_t j0) {
  __m512i acc[R > 0 ? R : 1][C], sums[C];
  for (int j = 0; j < C; ++j) {
    sums[j] = _mm512_setzero_si512();
    for (int i = 0; i < R; ++i) acc[i][j] = _mm512_setzero_si512();
  }
  const __m512i flip = _mm512_set1_epi8(char(t.flip)), ones = _mm512_set1_epi8(1);
  const std::uint8_t* a = t.a + r0 * t.lda;
  const std::uint8_t* b = t.b + j0 * t.ldb;
  const auto step = [&](auto load, __m512i flip_bits, std::int64_t k) {
    __m512i bv[C];
    for (int j = 0; j < C; ++j) {
      bv[j] = _mm512_xor_si512(load(b + j * t.ldb + k), flip_bits);
      if constexpr (Sums) sums[j] = _mm512_dpbusd_epi32(sums[j], ones, bv[j]);
    }
    for (int i = 0; i < R; ++i) {
      const __m512i av = load(a + i * t.lda + k);
      for (int j = 0; j < C; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], av, bv[j]);
    }
  };
  std::int64_t k = 0;
  for (; k + 64 <= t.depth; k += 64) step([](const std::uint8_t* s) { return _mm512_loadu_si512(s); }, flip, k);
  if (k < t.depth) {
    // Masked loads read nothing past the depth; the flip is masked too, so that B' is 0 there.
    const __mmask64 m = _bzhi_u64(~0ull, unsigned(t.depth - k));
    step([m](const std::uint8_t* s) { return _mm512_maskz_loadu_epi8(m, s); }, _mm512_maskz_mov_epi8(m, flip), k);
  }
  for (int i = 0; i < R; ++i) store_sums<C>(t.c + (r0 + i) * t.ldc + j0, acc[i], t.accumulate);
  if constexpr (Sums) store_sums<C>(t.col_sums + j0, sums, t.accumulate);
}

#include "schedules/qmm_dots_walk.inc"

}  // namespace

// Up to 5 rows: one tile of them by 4 columns with the column sums (its 24 accumulators, 4 columns
// and 3 constants fill the 32 registers). More rows: tiles of 4 x 6, which load A' from the L2 once
// per six columns rather than four, after a pass that sums the columns.
void qmm_dots_avx512_vnni(const QmmDotsTile& t) {
  if (t.rows <= 5)
    dots_walk<5, 5, 4>(t);
  else
    dots_walk<4, 0, 6>(t);
}

}  // namespace hk::detail

#pragma clang attribute pop
