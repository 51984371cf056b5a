// The AVX-512 VNNI rows kernel: A' rows against a row-major B read where it lies, each quad of
// B's rows interleaved in registers into vpdpbusd's groups of four depths, never stored as B'.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "schedules/qmm_kernels.hpp"

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vnni,bmi2"))), apply_to = function)

namespace hk::detail {
namespace {

// Byte then word interleaving of depths k..k+3 leaves, in 128-bit lane L of q[i], the columns
// 16L + 4i .. 16L + 4i + 3: the kernel keeps C in that order within each 64 columns, and this
// transpose of lanes (its own inverse) moves 64 columns between it and the natural order.
inline void transpose_lanes(std::int32_t* v) {
  const __m512i x0 = _mm512_load_si512(v), x1 = _mm512_load_si512(v + 16);
  const __m512i x2 = _mm512_load_si512(v + 32), x3 = _mm512_load_si512(v + 48);
  const __m512i u0 = _mm512_shuffle_i64x2(x0, x1, 0x44), u1 = _mm512_shuffle_i64x2(x0, x1, 0xee);
  const __m512i u2 = _mm512_shuffle_i64x2(x2, x3, 0x44), u3 = _mm512_shuffle_i64x2(x2, x3, 0xee);
  _mm512_store_si512(v, _mm512_shuffle_i64x2(u0, u2, 0x88));
  _mm512_store_si512(v + 16, _mm512_shuffle_i64x2(u0, u2, 0xdd));
  _mm512_store_si512(v + 32, _mm512_shuffle_i64x2(u1, u3, 0x88));
  _mm512_store_si512(v + 48, _mm512_shuffle_i64x2(u1, u3, 0xdd));
}

// vpdpbusd's groups of depths k..k+3 for 64 columns, from those depths' rows of B'.
inline void interleave(__m512i r0, __m512i r1, __m512i r2, __m512i r3, __m512i (&q)[4]) {
  const __m512i t0 = _mm512_unpacklo_epi8(r0, r1), t1 = _mm512_unpackhi_epi8(r0, r1);
  const __m512i t2 = _mm512_unpacklo_epi8(r2, r3), t3 = _mm512_unpackhi_epi8(r2, r3);
  q[0] = _mm512_unpacklo_epi16(t0, t2);
  q[1] = _mm512_unpackhi_epi16(t0, t2);
  q[2] = _mm512_unpacklo_epi16(t1, t3);
  q[3] = _mm512_unpackhi_epi16(t1, t3);
}

// 64 columns of C and of the column sums (+)= P quads of depths; row r's quad u of A' is
// a_quads[u][r].
template <int P>
inline void add_quads(const __m512i (&q)[P][4], const std::int32_t (*a_quads)[qmm_rows_max_rows], std::int64_t rows,
                      std::int32_t* c, std::int64_t ldc, std::int32_t* sums) {
  const __m512i ones = _mm512_set1_epi8(1);
  for (int i = 0; i < 4; ++i) {
    __m512i v = _mm512_load_si512(sums + 16 * i);
    for (int u = 0; u < P; ++u) v = _mm512_dpbusd_epi32(v, ones, q[u][i]);
    _mm512_store_si512(sums + 16 * i, v);
  }
  for (std::int64_t r = 0; r < rows; ++r, c += ldc) {
    __m512i a[P];
    for (int u = 0; u < P; ++u) a[u] = _mm512_set1_epi32(a_quads[u][r]);
    for (int i = 0; i < 4; ++i) {
      __m512i v = _mm512_load_si512(c + 16 * i);
      for (int u = 0; u < P; ++u) v = _mm512_dpbusd_epi32(v, a[u], q[u][i]);
      _mm512_store_si512(c + 16 * i, v);
    }
  }
}

}  // namespace

// Eight depths at a time, every 64 columns: eight rows of B loaded, interleaved and added into
// each row's C and into the column sums, which stay in the L1 between passes (two quads a trip:
// one took a quarter longer). So B is read as eight streams along its rows, which memory serves
// almost as fast as in order, where walking down 64 columns (packing's order) waited on every
// line; the next eight rows' lines are requested a pass ahead (docs/performance.md, "B read by
// rows").
void qmm_rows_avx512_vnni(const QmmRowsTile& tile) {
  const QmmRowsTile t = tile;  // a copy, which stores to C cannot alias
  const std::int64_t chunks = (t.cols + 63) / 64, whole = t.cols / 64;
  const auto each_row = [&](auto&& f) {
    for (std::int64_t r = 0; r <= t.rows; ++r)
      for (std::int64_t j = 0; j < chunks; ++j) f((r < t.rows ? t.c + r * t.ldc : t.col_sums) + 64 * j);
  };
  each_row([&](std::int32_t* v) {
    if (t.accumulate)
      transpose_lanes(v);
    else
      std::fill_n(v, 64, 0);
  });
  const __m512i flip = _mm512_set1_epi8(char(t.flip)), zero = _mm512_setzero_si512();
  const __mmask64 tail = _bzhi_u64(~0ull, unsigned(t.cols - 64 * whole));
  std::int32_t a_quads[2][qmm_rows_max_rows];
  const auto load_a = [&](std::int64_t k, std::int32_t* to) {
    const std::size_t valid = std::size_t(std::min<std::int64_t>(t.depth - k, 4));
    for (std::int64_t r = 0; r < t.rows; ++r) {
      // In the last quad only the bytes before the depth are read: the rest meet B' rows of 0.
      to[r] = 0;
      std::memcpy(&to[r], t.a + r * t.lda + k, valid);
    }
  };
  // Rows k..k+3 of B' at 64 columns from `at`, masked by m (nothing read past B's columns, B' 0
  // there) and only those before the depth.
  const auto quad_at = [&](const std::uint8_t* at, std::int64_t k, __mmask64 m, __m512i (&q)[4]) {
    const __m512i f = _mm512_maskz_mov_epi8(m, flip);
    __m512i r[4];
    for (int d = 0; d < 4; ++d)
      r[d] = k + d < t.depth ? _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, at + d * t.ldb), f) : zero;
    interleave(r[0], r[1], r[2], r[3], q);
  };
  const auto whole_quad_at = [&](const std::uint8_t* at, __m512i (&q)[4]) {
    interleave(_mm512_xor_si512(_mm512_loadu_si512(at), flip), _mm512_xor_si512(_mm512_loadu_si512(at + t.ldb), flip),
               _mm512_xor_si512(_mm512_loadu_si512(at + 2 * t.ldb), flip),
               _mm512_xor_si512(_mm512_loadu_si512(at + 3 * t.ldb), flip), q);
  };
  std::int64_t k = 0;
  for (; k + 8 <= t.depth; k += 8) {
    load_a(k, a_quads[0]);
    load_a(k + 4, a_quads[1]);
    const std::uint8_t* const b = t.b + k * t.ldb;
    const bool ahead = k + 16 <= t.depth;
    __m512i q[2][4];
    for (std::int64_t j = 0; j < whole; ++j) {
      const std::uint8_t* const at = b + 64 * j;
      if (ahead)
        for (int d = 8; d < 16; ++d) _mm_prefetch(reinterpret_cast<const char*>(at + d * t.ldb), _MM_HINT_T0);
      whole_quad_at(at, q[0]);
      whole_quad_at(at + 4 * t.ldb, q[1]);
      add_quads<2>(q, a_quads, t.rows, t.c + 64 * j, t.ldc, t.col_sums + 64 * j);
    }
    if (whole < chunks) {
      quad_at(b + 64 * whole, k, tail, q[0]);
      quad_at(b + 4 * t.ldb + 64 * whole, k + 4, tail, q[1]);
      add_quads<2>(q, a_quads, t.rows, t.c + 64 * whole, t.ldc, t.col_sums + 64 * whole);
    }
  }
  for (; k < t.depth; k += 4) {
    load_a(k, a_quads[0]);
    __m512i q[1][4];
    for (std::int64_t j = 0; j < chunks; ++j) {
      quad_at(t.b + k * t.ldb + 64 * j, k, j < whole ? ~__mmask64(0) : tail, q[0]);
      add_quads<1>(q, a_quads, t.rows, t.c + 64 * j, t.ldc, t.col_sums + 64 * j);
    }
  }
  each_row(transpose_lanes);
}

}  // namespace hk::detail

#pragma clang attribute pop
