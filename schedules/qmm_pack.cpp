// Packing the QuantizedLinearMatMul operands into the kernels' u8 x s8 layouts.
#include "schedules/qmm_pack.hpp"

#include <algorithm>
#include <cstdlib>
#include <emmintrin.h>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "hetkern/error.hpp"
#include "hetkern/info.hpp"
#include "schedules/qmm_tail_bytes.hpp"

namespace hk::detail {
namespace {

constexpr std::size_t byte_alignment = 64;

void free_aligned(std::byte* p) { std::free(p); }

// B' = B - 128 for uint8 (a flip of the top bit), B itself for int8.
inline std::int8_t shifted_b(const void* data, std::int64_t i, DataType source) {
  const auto raw = static_cast<const std::uint8_t*>(data)[i];
  return static_cast<std::int8_t>(source == DataType::uint8 ? raw ^ 0x80u : raw);
}

inline __m128i low_bytes_to_i16(__m128i v) { return _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8); }
inline __m128i high_bytes_to_i16(__m128i v) { return _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8); }
inline __m128i low_i16_to_i32(__m128i v) { return _mm_srai_epi32(_mm_unpacklo_epi16(v, v), 16); }
inline __m128i high_i16_to_i32(__m128i v) { return _mm_srai_epi32(_mm_unpackhi_epi16(v, v), 16); }

// B' + 128 as unsigned bytes: |B'| <= 64 exactly when it lies in [64, 192]. Tracks the least and
// the greatest of every byte seen.
struct PairBound {
  __m128i lowest = _mm_set1_epi8(static_cast<char>(0xFF)), highest = _mm_setzero_si128();
  void see(__m128i b_prime) {
    const __m128i u = _mm_xor_si128(b_prime, _mm_set1_epi8(static_cast<char>(0x80)));
    lowest = _mm_min_epu8(lowest, u);
    highest = _mm_max_epu8(highest, u);
  }
  bool fits() const {
    alignas(16) std::uint8_t lo[16], hi[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(lo), lowest);
    _mm_store_si128(reinterpret_cast<__m128i*>(hi), highest);
    for (int i = 0; i < 16; ++i)
      if (lo[i] < 64 || hi[i] > 192) return false;
    return true;
  }
};

// Panels [0, panels) of a B whose rows are contiguous: four rows of 16 bytes become 16 columns x
// 4 depths by two rounds of byte/word interleaving (SSE2, so every x86-64 CPU runs it); panel `p`
// lands panel_bytes apart. row(k, p) gives depth k (< K) of panel p as B', its missing columns
// zero. Returns whether every |B'| <= 64; adds column sums when Sums.
template <bool Sums, class Row>
bool interleave_panels(std::int8_t* dst, std::int64_t panel_bytes, std::int64_t K, std::int64_t panels,
                       std::int64_t* sums, Row row) {
  // int32 partial column sums stay exact for 2^22 depths (|B'| <= 128); fold them before that.
  constexpr std::int64_t chunk = std::int64_t(1) << 22;
  PairBound bound;
  std::vector<__m128i> total(Sums ? std::size_t(panels * 4) : 0);
  for (std::int64_t c0 = 0; c0 < K; c0 += chunk) {
    std::fill(total.begin(), total.end(), _mm_setzero_si128());
    // Four source rows at a time, read sequentially; the panels they feed are an odd number of
    // cache lines apart (panel_bytes), so the writes do not all fall into one cache set.
    for (std::int64_t k = c0; k < std::min(K, c0 + chunk); k += 4)
      for (std::int64_t p = 0; p < panels; ++p) {
        const __m128i r0 = row(k, p);
        const __m128i r1 = k + 1 < K ? row(k + 1, p) : _mm_setzero_si128();
        const __m128i r2 = k + 2 < K ? row(k + 2, p) : _mm_setzero_si128();
        const __m128i r3 = k + 3 < K ? row(k + 3, p) : _mm_setzero_si128();
        const __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
        const __m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
        auto* out = reinterpret_cast<__m128i*>(dst + p * panel_bytes + (k / 4) * 64);
        _mm_store_si128(out + 0, _mm_unpacklo_epi16(t0, t2));
        _mm_store_si128(out + 1, _mm_unpackhi_epi16(t0, t2));
        _mm_store_si128(out + 2, _mm_unpacklo_epi16(t1, t3));
        _mm_store_si128(out + 3, _mm_unpackhi_epi16(t1, t3));
        bound.see(r0), bound.see(r1), bound.see(r2), bound.see(r3);
        if constexpr (Sums) {
          const __m128i low = _mm_add_epi16(_mm_add_epi16(low_bytes_to_i16(r0), low_bytes_to_i16(r1)),
                                            _mm_add_epi16(low_bytes_to_i16(r2), low_bytes_to_i16(r3)));
          const __m128i high = _mm_add_epi16(_mm_add_epi16(high_bytes_to_i16(r0), high_bytes_to_i16(r1)),
                                             _mm_add_epi16(high_bytes_to_i16(r2), high_bytes_to_i16(r3)));
          __m128i* t = total.data() + p * 4;
          t[0] = _mm_add_epi32(t[0], low_i16_to_i32(low));
          t[1] = _mm_add_epi32(t[1], high_i16_to_i32(low));
          t[2] = _mm_add_epi32(t[2], low_i16_to_i32(high));
          t[3] = _mm_add_epi32(t[3], high_i16_to_i32(high));
        }
      }
    for (std::int64_t p = 0; Sums && p < panels; ++p) {
      alignas(16) std::int32_t part[16];
      for (int i = 0; i < 4; ++i)
        _mm_store_si128(reinterpret_cast<__m128i*>(part + 4 * i), total[std::size_t(p * 4 + i)]);
      for (int c = 0; c < 16; ++c) sums[p * 16 + c] += part[c];
    }
  }
  return bound.fits();
}

// The panel of the last `cols` (< 16) columns of a B whose rows are contiguous, through the same
// interleaving as full panels. A row is read 16 bytes at once, and the bytes past its columns
// masked off, wherever those 16 bytes lie inside B (before its last element, so inside the
// caller's memory); the last rows are copied aside first.
bool pack_partial_panel_by_rows(std::int8_t* dst, const std::uint8_t* src, std::int64_t K, std::int64_t row_stride,
                                std::uint8_t flip_value, std::int64_t cols, std::int64_t* sums) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(flip_value)), keep = first_bytes_mask(cols);
  // Row k's 16 bytes end within B when k * row_stride + 16 <= (K - 1) * row_stride + cols.
  const std::int64_t whole_rows =
      row_stride == 0 ? 0 : std::max<std::int64_t>(K - (16 - cols + row_stride - 1) / row_stride, 0);
  std::fill_n(sums, qmm_panel_cols, 0);
  return interleave_panels<true>(dst, 0, K, 1, sums, [&](std::int64_t k, std::int64_t) {
    const std::uint8_t* r = src + k * row_stride;
    const __m128i raw = k < whole_rows ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r)) : load_first(r, cols);
    return _mm_and_si128(_mm_xor_si128(raw, flip), keep);
  });
}

// Panels [0, panels) of the first `N` columns of a B whose columns are contiguous (element (k, n)
// at src + n * col_stride + k; B as the transpose of a row-major N x K matrix, PyTorch's weight
// layout). Sixteen bytes of each of four columns (four depth groups each) become four groups of
// those columns by a 4 x 4 transpose of 32-bit words. Returns whether every |B'| <= 64; sets the
// column sums.
bool pack_panels_by_columns(std::int8_t* dst, std::int64_t panel_bytes, const std::uint8_t* src, std::int64_t K,
                            std::int64_t col_stride, std::uint8_t flip_value, std::int64_t N, std::int64_t panels,
                            std::int64_t* sums) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(flip_value)), bias = _mm_set1_epi8(static_cast<char>(0x80));
  const __m128i zero = _mm_setzero_si128();
  PairBound bound;
  for (std::int64_t p = 0; p < panels; ++p) {
    const std::int64_t cols = std::min(qmm_panel_cols, N - p * qmm_panel_cols);
    const std::uint8_t* const first = src + p * qmm_panel_cols * col_stride;
    __m128i total[16];
    std::fill_n(total, 16, zero);
    for (std::int64_t k = 0; k < K; k += 16) {
      __m128i v[16];
      for (std::int64_t c = 0; c < 16; ++c) {
        const std::uint8_t* column = first + c * col_stride + k;
        v[c] = c >= cols          ? zero
               : K - k >= 16      ? _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(column)), flip)
                                  : _mm_and_si128(_mm_xor_si128(load_first(column, K - k), flip), first_bytes_mask(K - k));
        bound.see(v[c]);
        // psadbw sums unsigned bytes: B' + 128, less 128 per byte at the end.
        total[c] = _mm_add_epi64(total[c], _mm_sad_epu8(_mm_xor_si128(v[c], bias), zero));
      }
      auto* out = reinterpret_cast<__m128i*>(dst + p * panel_bytes + (k / 4) * 64);
      for (int c = 0; c < 16; c += 4) {
        const __m128i t0 = _mm_unpacklo_epi32(v[c], v[c + 1]), t1 = _mm_unpacklo_epi32(v[c + 2], v[c + 3]);
        const __m128i t2 = _mm_unpackhi_epi32(v[c], v[c + 1]), t3 = _mm_unpackhi_epi32(v[c + 2], v[c + 3]);
        _mm_store_si128(out + c / 4, _mm_unpacklo_epi64(t0, t1));
        _mm_store_si128(out + 4 + c / 4, _mm_unpackhi_epi64(t0, t1));
        _mm_store_si128(out + 8 + c / 4, _mm_unpacklo_epi64(t2, t3));
        _mm_store_si128(out + 12 + c / 4, _mm_unpackhi_epi64(t2, t3));
      }
    }
    const std::int64_t bytes_seen = round_up(K, 16);
    for (int c = 0; c < 16; ++c)
      sums[p * qmm_panel_cols + c] =
          _mm_cvtsi128_si64(total[c]) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(total[c], total[c])) - 128 * bytes_seen;
  }
  return bound.fits();
}

// A contiguous row of A', 16 bytes at a time, summed by psadbw (byte sums in 64-bit lanes): the
// element-wise loop's widening sum compiled to several instructions a byte.
std::int64_t copy_row_summed(std::uint8_t* dst, const std::uint8_t* src, std::int64_t K,
                             std::uint8_t flip) {
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip)), zero = _mm_setzero_si128();
  __m128i acc = zero;
  std::int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    const __m128i v = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k)), f);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k), v);
    acc = _mm_add_epi64(acc, _mm_sad_epu8(v, zero));
  }
  std::int64_t sum = _mm_cvtsi128_si64(acc) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
  for (; k < K; ++k) {
    dst[k] = src[k] ^ flip;
    sum += dst[k];
  }
  return sum;
}

}  // namespace

AlignedBytes::AlignedBytes(std::int64_t bytes) {
  ensure(bytes);
  if (data) std::memset(data.get(), 0, std::size_t(size));
}

void AlignedBytes::ensure(std::int64_t bytes) {
  if (bytes <= size && data) return;
  const auto rounded = round_up(std::max<std::int64_t>(bytes, 1), byte_alignment);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(byte_alignment, std::size_t(rounded)));
  if (!p) throw std::bad_alloc();
  data = {p, free_aligned};
  size = rounded;
}

void check_packed_sizes(const char* op, std::int64_t a_batches, std::int64_t M,
                        std::int64_t b_batches, std::int64_t K, std::int64_t N) {
  // 128-bit arithmetic: the sizes were validated to fit 63 bits, their products need not.
  using u128 = unsigned __int128;
  const auto up = [](u128 v, u128 to) { return (v + to - 1) / to * to; };
  const u128 kp = up(u128(K), qmm_depth_align);
  const u128 sum_bytes = sizeof(std::int64_t);
  const u128 b_bytes = u128(b_batches) * (up(u128(N), qmm_panel_cols) / qmm_panel_cols) *
                       (kp * qmm_panel_cols + 64 + qmm_panel_cols * sum_bytes);
  const u128 a_bytes = u128(a_batches) * up(u128(M) + 1, qmm_row_align) * (kp + sum_bytes);
  const auto refuse = [&](const char* subject, u128 bytes, const std::string& what) {
    // Beyond 2^64 the count itself is not printable; the bound is what matters.
    const std::string amount = bytes >> 64 ? "more than 2^64" : std::to_string(std::uint64_t(bytes));
    throw Error(Errc::invalid_shape, op, subject,
                "packing " + what + " for the kernels needs " + amount + " bytes, beyond the " +
                    std::to_string(max_packed_bytes) + " any machine can allocate");
  };
  if (b_bytes > u128(max_packed_bytes))
    refuse("b", b_bytes, std::to_string(b_batches) + " matrices of K x N = " + std::to_string(K) +
                             " x " + std::to_string(N));
  if (a_bytes > u128(max_packed_bytes))
    refuse("a", a_bytes, std::to_string(a_batches) + " matrices of M x K = " + std::to_string(M) +
                             " x " + std::to_string(K));
}

void shape_panels(PackedPanels& out, std::int64_t batches, std::int64_t K, std::int64_t N,
                  DataType source, bool zeroed) {
  out.batches = batches;
  out.K = K;
  out.N = N;
  out.kp = packed_depth(K);
  out.panels = (N + qmm_panel_cols - 1) / qmm_panel_cols;
  // One spare cache line per panel: panels a power of two apart would share cache sets, both
  // while packing and in the kernels, which read several panels side by side.
  out.panel_bytes = out.kp * qmm_panel_cols + 64;
  out.batch_bytes = out.panels * out.panel_bytes;
  out.source = source;
  out.pairs_fit_int16 = true;
  const std::int64_t sum_bytes = batches * out.panels * qmm_panel_cols * std::int64_t(sizeof(std::int64_t));
  if (zeroed) {
    out.bytes = AlignedBytes(batches * out.batch_bytes);
    out.col_sums = AlignedBytes(sum_bytes);
  } else {
    out.bytes.ensure(batches * out.batch_bytes);
    out.col_sums.ensure(sum_bytes);
  }
}

std::vector<std::uint8_t> unpack_panels(const PackedPanels& b) {
  std::vector<std::uint8_t> plain(std::size_t(b.batches * b.K * b.N));
  const std::uint8_t flip = b.source == DataType::uint8 ? 0x80 : 0x00;
  for (std::int64_t t = 0; t < b.batches; ++t)
    for (std::int64_t k = 0; k < b.K; ++k)
      for (std::int64_t n = 0; n < b.N; ++n) {
        const std::int8_t v = b.panel(t, n / qmm_panel_cols)[(k / qmm_group_depth) * 64 +
                                                             (n % qmm_panel_cols) * qmm_group_depth +
                                                             k % qmm_group_depth];
        plain[std::size_t((t * b.K + k) * b.N + n)] = std::uint8_t(v) ^ flip;
      }
  return plain;
}

bool pack_panels(PackedPanels& out, std::int64_t batch, const void* data, std::int64_t row_stride,
                 std::int64_t col_stride, std::int64_t p0, std::int64_t p1, bool with_sums) {
  bool fits = true;
  std::int64_t* sums = out.col_sums.as<std::int64_t>() + batch * out.panels * qmm_panel_cols;
  // The group holding depth K-1 and every group after it may be partly unwritten below.
  const std::int64_t written = (out.K / qmm_group_depth) * 64;
  for (std::int64_t p = p0; p < p1; ++p)
    std::memset(out.bytes.as<std::byte>() + batch * out.batch_bytes + p * out.panel_bytes + written, 0,
                std::size_t(out.panel_bytes - written));
  const std::uint8_t flip = out.source == DataType::uint8 ? 0x80 : 0x00;
  const auto panel_at = [&](std::int64_t p) {
    return reinterpret_cast<std::int8_t*>(out.bytes.as<std::byte>() + batch * out.batch_bytes + p * out.panel_bytes);
  };
  const auto* const source = static_cast<const std::uint8_t*>(data);
  if (col_stride == 1) {
    // Full panels by the vector paths, four at a time where the kernels' level has AVX-512.
    const std::int64_t full_end = std::min(p1, out.N / qmm_panel_cols);
    const auto source_at = [&](std::int64_t p) { return source + p * qmm_panel_cols; };
    if (full_end > p0) std::fill_n(sums + p0 * qmm_panel_cols, (full_end - p0) * qmm_panel_cols, 0);
    const std::int64_t quads = active_isa() >= Isa::avx512 ? (full_end - p0) / 4 : 0;
    if (quads > 0) {
      fits = pack_panel_quads_avx512(panel_at(p0), out.panel_bytes, source_at(p0), out.K, row_stride, flip, quads,
                                     with_sums ? sums + p0 * qmm_panel_cols : nullptr);
      p0 += 4 * quads;
    }
    if (full_end > p0) {
      const std::uint8_t* const first = source_at(p0);
      const __m128i flips = _mm_set1_epi8(static_cast<char>(flip));
      const auto row = [&](std::int64_t k, std::int64_t p) {
        return _mm_xor_si128(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(first + k * row_stride + p * qmm_panel_cols)), flips);
      };
      fits = (with_sums ? interleave_panels<true, decltype(row)> : interleave_panels<false, decltype(row)>)(
                 panel_at(p0), out.panel_bytes, out.K, full_end - p0, sums + p0 * qmm_panel_cols, row) &&
             fits;
      p0 = full_end;
    }
    if (p0 < p1)
      fits = pack_partial_panel_by_rows(panel_at(p0), source_at(p0), out.K, row_stride, flip,
                                        out.N - p0 * qmm_panel_cols, sums + p0 * qmm_panel_cols) &&
             fits;
    return fits;
  }
  if (row_stride == 1)
    return pack_panels_by_columns(panel_at(p0), out.panel_bytes, source + p0 * qmm_panel_cols * col_stride, out.K,
                                  col_stride, flip, out.N - p0 * qmm_panel_cols, p1 - p0, sums + p0 * qmm_panel_cols);
  for (std::int64_t p = p0; p < p1; ++p) {
    auto* dst = reinterpret_cast<std::int8_t*>(out.bytes.as<std::byte>() + batch * out.batch_bytes +
                                               p * out.panel_bytes);
    const std::int64_t n0 = p * qmm_panel_cols;
    const std::int64_t cols = std::min(qmm_panel_cols, out.N - n0);
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t base = (n0 + c) * col_stride;
      std::int64_t sum = 0;
      for (std::int64_t k = 0; k < out.K; k += 2) {
        const std::int8_t v0 = shifted_b(data, base + k * row_stride, out.source);
        const std::int8_t v1 = k + 1 < out.K ? shifted_b(data, base + (k + 1) * row_stride, out.source) : 0;
        dst[(k / 4) * 64 + c * 4 + k % 4] = v0;
        dst[((k + 1) / 4) * 64 + c * 4 + (k + 1) % 4] = v1;
        sum += v0 + v1;
        fits = fits && std::abs(int(v0)) <= 64 && std::abs(int(v1)) <= 64;
      }
      sums[n0 + c] = sum;
    }
  }
  return fits;
}

void PackedRows::shape(std::int64_t rows_, std::int64_t kp_) {
  rows = round_up(rows_, qmm_row_align);
  kp = kp_;
  bytes.ensure(rows * kp);
  row_sums.ensure(rows * std::int64_t(sizeof(std::int64_t)));
}

void PackedRows::ones_row(std::int64_t r) {
  std::memset(row(r), 1, std::size_t(kp));
  row_sums.as<std::int64_t>()[r] = 0;
}

void pack_rows(PackedRows& out, const void* data, DataType type, std::int64_t K,
               std::int64_t row_stride, std::int64_t col_stride, std::int64_t r0, std::int64_t r1) {
  const std::uint8_t flip = type == DataType::int8 ? 0x80 : 0x00;
  const auto* src = static_cast<const std::uint8_t*>(data);
  const auto copy_row = active_isa() >= Isa::avx512 ? copy_row_summed_avx512 : copy_row_summed;
  for (std::int64_t r = r0; r < r1; ++r) {
    std::uint8_t* dst = out.row(r);
    const std::uint8_t* s = src + r * row_stride;
    std::int64_t sum = 0;
    if (col_stride == 1) {
      sum = copy_row(dst, s, K, flip);
    } else {
      for (std::int64_t k = 0; k < K; ++k) {
        dst[k] = s[k * col_stride] ^ flip;
        sum += dst[k];
      }
    }
    out.row_sums.as<std::int64_t>()[r] = sum;
  }
}

}  // namespace hk::detail
