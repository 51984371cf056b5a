// The AVX-512 VNNI QuantizedLinearMatMul kernel: vpdpbusd multiplies four u8 x s8 pairs per lane
// and adds them to int32 without intermediate saturation, so it is exact for every input.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "schedules/qmm_kernels.hpp"

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vnni"))), apply_to = function)

namespace hk::detail {
namespace {

// How far ahead in each panel the first row tile of a column requests B: 32 depth groups.
constexpr std::int64_t b_prefetch_bytes = 2048;

// MR rows x NP panels: MR * NP accumulators (24 of the 32 zmm at 6 x 4), one broadcast per row
// and one load per panel for every depth group of four.
template <int MR, int NP, bool PrefetchB>
void vnni_tile(const QmmTile& t, std::int64_t r0, std::int64_t p0) {
  __m512i acc[MR][NP];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NP; ++j) acc[i][j] = _mm512_setzero_si512();
  const std::uint8_t* a = t.a + r0 * t.lda;
  const std::int8_t* b = t.b + p0 * t.panel_bytes;
  for (std::int64_t g = 0; g < t.groups; ++g) {
    __m512i bv[NP];
    for (int j = 0; j < NP; ++j) bv[j] = _mm512_load_si512(b + j * t.panel_bytes + g * 64);
    if constexpr (PrefetchB)
      for (int j = 0; j < NP; ++j)
        _mm_prefetch(reinterpret_cast<const char*>(b + j * t.panel_bytes + g * 64 + b_prefetch_bytes), _MM_HINT_T0);
    for (int i = 0; i < MR; ++i) {
      std::int32_t four;
      std::memcpy(&four, a + i * t.lda + g * 4, 4);
      const __m512i av = _mm512_set1_epi32(four);
      for (int j = 0; j < NP; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], av, bv[j]);
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NP; ++j) {
      std::int32_t* c = t.c + (r0 + i) * t.ldc + (p0 + j) * 16;
      _mm512_store_si512(c, t.accumulate ? _mm512_add_epi32(_mm512_load_si512(c), acc[i][j]) : acc[i][j]);
    }
}

template <int NP, bool PrefetchB>
void vnni_rows(const QmmTile& t, std::int64_t r, std::int64_t rows, std::int64_t p0) {
  switch (rows) {
    case 6: vnni_tile<6, NP, PrefetchB>(t, r, p0); break;
    case 5: vnni_tile<5, NP, PrefetchB>(t, r, p0); break;
    case 4: vnni_tile<4, NP, PrefetchB>(t, r, p0); break;
    case 3: vnni_tile<3, NP, PrefetchB>(t, r, p0); break;
    case 2: vnni_tile<2, NP, PrefetchB>(t, r, p0); break;
    default: vnni_tile<1, NP, PrefetchB>(t, r, p0); break;
  }
}

// The first row tile of a column is the first to read its panels (from memory when B was packed
// once, by hk::pack_b) and requests them ahead; the later ones find them in L2, where the hardware
// prefetcher keeps up (docs/performance.md, "Packed B requested ahead").
template <int NP>
void vnni_column(const QmmTile& t, std::int64_t p0) {
  if (t.rows <= 0) return;
  const std::int64_t first = std::min<std::int64_t>(6, t.rows);
  vnni_rows<NP, true>(t, 0, first, p0);
  for (std::int64_t r = first; r < t.rows; r += 6) vnni_rows<NP, false>(t, r, std::min<std::int64_t>(6, t.rows - r), p0);
}

}  // namespace

void qmm_kernel_avx512_vnni(const QmmTile& t) {
  std::int64_t p = 0;
  for (; p + 4 <= t.panels; p += 4) vnni_column<4>(t, p);
  switch (t.panels - p) {
    case 3: vnni_column<3>(t, p); break;
    case 2: vnni_column<2>(t, p); break;
    case 1: vnni_column<1>(t, p); break;
    default: break;
  }
}

}  // namespace hk::detail

#pragma clang attribute pop
