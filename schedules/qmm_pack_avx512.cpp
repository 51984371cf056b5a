// Packing the matmul operands with AVX-512BW: B' 64 columns (four panels) at a time, with a third
// of the vector operations per byte of the 16-column SSE2 path; rows of A' 64 bytes at a time.
#include <immintrin.h>

#include <algorithm>

#include "schedules/qmm_pack.hpp"

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw"))), apply_to = function)

namespace hk::detail {
namespace {

inline __m512i row_or_zero(const std::uint8_t* row, bool present, __m512i flip) {
  return present ? _mm512_xor_si512(_mm512_loadu_si512(row), flip) : _mm512_setzero_si512();
}

}  // namespace

bool pack_panel_quads_avx512(std::int8_t* dst, std::int64_t panel_bytes, const std::uint8_t* src, std::int64_t K,
                             std::int64_t row_stride, std::uint8_t flip_value, std::int64_t quads,
                             std::int64_t* sums) {
  // int32 column sums stay exact for 2^22 depths (|B'| <= 128); fold them into sums before that.
  constexpr std::int64_t chunk = std::int64_t(1) << 22;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(flip_value));
  const __m512i ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1);
  __m512i lowest = _mm512_set1_epi8(127), highest = _mm512_set1_epi8(-128);
  for (std::int64_t q = 0; q < quads; ++q) {
    std::int8_t* const out = dst + 4 * q * panel_bytes;
    const std::uint8_t* const in = src + 64 * q;
    for (std::int64_t c0 = 0; c0 < K; c0 += chunk) {
      __m512i total[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                          _mm512_setzero_si512()};
      // Depths k..k+3 of 64 columns: byte then word interleaving gives, in 128-bit lane L of
      // o0..o3, the four 16-byte quarters of panel L's group; a 4 x 4 transpose of lanes puts
      // each panel's group (16 columns x 4 depths) in one vector.
      for (std::int64_t k = c0; k < std::min(K, c0 + chunk); k += 4) {
        const std::uint8_t* r = in + k * row_stride;
        const __m512i r0 = row_or_zero(r, true, flip);
        const __m512i r1 = row_or_zero(r + row_stride, k + 1 < K, flip);
        const __m512i r2 = row_or_zero(r + 2 * row_stride, k + 2 < K, flip);
        const __m512i r3 = row_or_zero(r + 3 * row_stride, k + 3 < K, flip);
        lowest = _mm512_min_epi8(lowest, _mm512_min_epi8(_mm512_min_epi8(r0, r1), _mm512_min_epi8(r2, r3)));
        highest = _mm512_max_epi8(highest, _mm512_max_epi8(_mm512_max_epi8(r0, r1), _mm512_max_epi8(r2, r3)));
        const __m512i t0 = _mm512_unpacklo_epi8(r0, r1), t1 = _mm512_unpackhi_epi8(r0, r1);
        const __m512i t2 = _mm512_unpacklo_epi8(r2, r3), t3 = _mm512_unpackhi_epi8(r2, r3);
        const __m512i o0 = _mm512_unpacklo_epi16(t0, t2), o1 = _mm512_unpackhi_epi16(t0, t2);
        const __m512i o2 = _mm512_unpacklo_epi16(t1, t3), o3 = _mm512_unpackhi_epi16(t1, t3);
        const __m512i u0 = _mm512_shuffle_i64x2(o0, o1, 0x44), u1 = _mm512_shuffle_i64x2(o0, o1, 0xee);
        const __m512i u2 = _mm512_shuffle_i64x2(o2, o3, 0x44), u3 = _mm512_shuffle_i64x2(o2, o3, 0xee);
        const __m512i panel[4] = {_mm512_shuffle_i64x2(u0, u2, 0x88), _mm512_shuffle_i64x2(u0, u2, 0xdd),
                                  _mm512_shuffle_i64x2(u1, u3, 0x88), _mm512_shuffle_i64x2(u1, u3, 0xdd)};
        for (int l = 0; l < 4; ++l) {
          _mm512_store_si512(out + l * panel_bytes + (k / 4) * 64, panel[l]);
          // 1 x B' in pairs (int16, at most 256 in magnitude), then the pairs in fours (int32).
          if (sums)
            total[l] = _mm512_add_epi32(total[l], _mm512_madd_epi16(_mm512_maddubs_epi16(ones8, panel[l]), ones16));
        }
      }
      for (int l = 0; sums && l < 4; ++l) {
        alignas(64) std::int32_t part[16];
        _mm512_store_si512(part, total[l]);
        for (int c = 0; c < 16; ++c) sums[(4 * q + l) * qmm_panel_cols + c] += part[c];
      }
    }
  }
  // |B'| <= 64 for every byte: the least at least -64 and the greatest at most 64.
  const bool low_fits = _mm512_cmplt_epi8_mask(lowest, _mm512_set1_epi8(-64)) == 0;
  const bool high_fits = _mm512_cmpgt_epi8_mask(highest, _mm512_set1_epi8(64)) == 0;
  return low_fits && high_fits;
}

std::int64_t copy_row_summed_avx512(std::uint8_t* dst, const std::uint8_t* src, std::int64_t K,
                                    std::uint8_t flip_value) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(flip_value)), zero = _mm512_setzero_si512();
  __m512i acc = zero;
  for (std::int64_t k = 0; k < K; k += 64) {
    // The last piece through byte masks: bytes past K are neither read, written nor summed.
    const __mmask64 in = K - k >= 64 ? ~__mmask64(0) : (__mmask64(1) << (K - k)) - 1;
    const __m512i v = _mm512_maskz_mov_epi8(in, _mm512_xor_si512(_mm512_maskz_loadu_epi8(in, src + k), flip));
    _mm512_mask_storeu_epi8(dst + k, in, v);
    acc = _mm512_add_epi64(acc, _mm512_sad_epu8(v, zero));
  }
  return _mm512_reduce_add_epi64(acc);
}

}  // namespace hk::detail

#pragma clang attribute pop
