// The AVX2 rows kernel: A' rows against a row-major B read where it lies, each pair of B's rows
// interleaved as it loads, widened to int16 and summed in pairs by vpmaddwd (255 * 128 * 2 < 2^31:
// exact for every input), never stored as B'.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "schedules/qmm_kernels.hpp"
#include "schedules/qmm_tail_bytes.hpp"

#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)

namespace hk::detail {
namespace {

// Depths k and k+1 of 16 columns of B' as int16 pairs, columns in order: 8 in each of q[0], q[1].
inline void interleave(__m128i r0, __m128i r1, __m256i (&q)[2]) {
  q[0] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(r0, r1));
  q[1] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(r0, r1));
}

// 16 columns of C and of the column sums (+)= P pairs of depths; row r's pair u of A' (two bytes,
// each widened to int16) is a_pairs[u][r].
template <int P>
inline void add_pairs(const __m256i (&q)[P][2], const std::int32_t (*a_pairs)[qmm_rows_max_rows], std::int64_t rows,
                      std::int32_t* c, std::int64_t ldc, std::int32_t* sums) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int i = 0; i < 2; ++i) {
    auto* s = reinterpret_cast<__m256i*>(sums + 8 * i);
    __m256i v = _mm256_load_si256(s);
    for (int u = 0; u < P; ++u) v = _mm256_add_epi32(v, _mm256_madd_epi16(q[u][i], ones));
    _mm256_store_si256(s, v);
  }
  for (std::int64_t r = 0; r < rows; ++r, c += ldc) {
    __m256i a[P];
    for (int u = 0; u < P; ++u) a[u] = _mm256_set1_epi32(a_pairs[u][r]);
    for (int i = 0; i < 2; ++i) {
      auto* cv = reinterpret_cast<__m256i*>(c + 8 * i);
      __m256i v = _mm256_load_si256(cv);
      for (int u = 0; u < P; ++u) v = _mm256_add_epi32(v, _mm256_madd_epi16(a[u], q[u][i]));
      _mm256_store_si256(cv, v);
    }
  }
}

}  // namespace

// The VNNI kernel's walk (qmm_rows_avx512_vnni.cpp) in pairs: eight depths at a time, every 16
// columns, eight rows of B loaded, interleaved and added into each row's C and the column sums,
// which stay in the L1 between passes; the next eight rows' lines are requested a pass ahead.
void qmm_rows_avx2(const QmmRowsTile& tile) {
  const QmmRowsTile t = tile;  // a copy, which stores to C cannot alias
  const std::int64_t chunks = (t.cols + 15) / 16, whole = t.cols / 16;
  if (!t.accumulate)
    for (std::int64_t r = 0; r <= t.rows; ++r) std::fill_n(r < t.rows ? t.c + r * t.ldc : t.col_sums, 16 * chunks, 0);
  const __m128i flip = _mm_set1_epi8(char(t.flip)), zero = _mm_setzero_si128();
  const std::int64_t left = t.cols - 16 * whole;
  const __m128i tail_flip = _mm_and_si128(flip, first_bytes_mask(left));
  std::int32_t a_pairs[4][qmm_rows_max_rows];
  const auto load_a = [&](std::int64_t k, std::int32_t* to) {
    for (std::int64_t r = 0; r < t.rows; ++r) {
      // Past the depth nothing is read: that byte is 0, as B' is there.
      const std::uint8_t* const at = t.a + r * t.lda + k;
      to[r] = std::int32_t(at[0]) | (k + 1 < t.depth ? std::int32_t(at[1]) << 16 : 0);
    }
  };
  // Rows k and k+1 of B' at 16 columns from `at`: whole, or the last `left` columns (nothing read
  // past them, B' 0 there); only rows before the depth.
  const auto pair_at = [&](const std::uint8_t* at, std::int64_t k, bool last_columns, __m256i (&q)[2]) {
    __m128i r[2];
    for (int d = 0; d < 2; ++d) {
      const std::uint8_t* const row = at + d * t.ldb;
      r[d] = k + d >= t.depth ? zero
             : last_columns   ? _mm_xor_si128(load_first(row, left), tail_flip)
                              : _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row)), flip);
    }
    interleave(r[0], r[1], q);
  };
  const auto whole_pair_at = [&](const std::uint8_t* at, __m256i (&q)[2]) {
    interleave(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at)), flip),
               _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at + t.ldb)), flip), q);
  };
  std::int64_t k = 0;
  for (; k + 8 <= t.depth; k += 8) {
    for (int u = 0; u < 4; ++u) load_a(k + 2 * u, a_pairs[u]);
    const std::uint8_t* const b = t.b + k * t.ldb;
    const bool ahead = k + 16 <= t.depth;
    __m256i q[4][2];
    for (std::int64_t j = 0; j < whole; ++j) {
      const std::uint8_t* const at = b + 16 * j;
      if (ahead && j % 4 == 0)
        for (int d = 8; d < 16; ++d) _mm_prefetch(reinterpret_cast<const char*>(at + d * t.ldb), _MM_HINT_T0);
      for (int u = 0; u < 4; ++u) whole_pair_at(at + 2 * u * t.ldb, q[u]);
      add_pairs<4>(q, a_pairs, t.rows, t.c + 16 * j, t.ldc, t.col_sums + 16 * j);
    }
    if (whole < chunks) {
      for (int u = 0; u < 4; ++u) pair_at(b + 2 * u * t.ldb + 16 * whole, k + 2 * u, true, q[u]);
      add_pairs<4>(q, a_pairs, t.rows, t.c + 16 * whole, t.ldc, t.col_sums + 16 * whole);
    }
  }
  for (; k < t.depth; k += 2) {
    load_a(k, a_pairs[0]);
    __m256i q[1][2];
    for (std::int64_t j = 0; j < chunks; ++j) {
      pair_at(t.b + k * t.ldb + 16 * j, k, j == whole, q[0]);
      add_pairs<1>(q, a_pairs, t.rows, t.c + 16 * j, t.ldc, t.col_sums + 16 * j);
    }
  }
}

}  // namespace hk::detail

#pragma clang attribute pop
