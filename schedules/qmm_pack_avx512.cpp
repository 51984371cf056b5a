// Packing the matmul operands with AVX-512BW: B' 64 columns (four panels) at a time, with a third
// of the vector operations per byte of the 16-column SSE2 path (its column sums by VNNI where the
// active level has it); rows of A' 64 bytes at a time.
#include <immintrin.h>

#include <algorithm>

#include "hetkern/info.hpp"
#include "schedules/qmm_pack.hpp"

namespace hk::detail {
namespace {

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw"))), apply_to = function)
namespace bw {
constexpr bool has_vnni = false;
#include "schedules/qmm_pack_quads.inc"
}  // namespace bw
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vnni"))), apply_to = function)
namespace vnni {
constexpr bool has_vnni = true;
#include "schedules/qmm_pack_quads.inc"
}  // namespace vnni
#pragma clang attribute pop

}  // namespace

bool pack_panel_quads_avx512(std::int8_t* dst, std::int64_t panel_bytes, const std::uint8_t* src, std::int64_t K,
                             std::int64_t row_stride, std::uint8_t flip_value, std::int64_t quads,
                             std::int64_t* sums) {
  return (active_isa() >= Isa::avx512_vnni ? vnni::pack_quads : bw::pack_quads)(dst, panel_bytes, src, K, row_stride,
                                                                              flip_value, quads, sums);
}

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw"))), apply_to = function)

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
