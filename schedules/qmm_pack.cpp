// Packing the QuantizedLinearMatMul operands into the kernels' u8 x s8 layouts.
#include "schedules/qmm_pack.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace hk::detail {
namespace {

constexpr std::size_t byte_alignment = 64;

void free_aligned(std::byte* p) { std::free(p); }

// B' = B - 128 for uint8 (a flip of the top bit), B itself for int8.
inline std::int8_t shifted_b(const void* data, std::int64_t i, DataType source) {
  const auto raw = static_cast<const std::uint8_t*>(data)[i];
  return static_cast<std::int8_t>(source == DataType::uint8 ? raw ^ 0x80u : raw);
}

}  // namespace

AlignedBytes::AlignedBytes(std::int64_t bytes) : size(bytes) {
  if (bytes == 0) return;
  const auto rounded = round_up(bytes, byte_alignment);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(byte_alignment, std::size_t(rounded)));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, std::size_t(rounded));
  data = {p, free_aligned};
}

PackedPanels make_panels(std::int64_t batches, std::int64_t K, std::int64_t N, DataType source) {
  PackedPanels out;
  out.batches = batches;
  out.K = K;
  out.N = N;
  out.kp = packed_depth(K);
  out.panels = (N + qmm_panel_cols - 1) / qmm_panel_cols;
  out.panel_bytes = out.kp * qmm_panel_cols;
  out.batch_bytes = out.panels * out.panel_bytes;
  out.source = source;
  out.bytes = AlignedBytes(batches * out.batch_bytes);
  out.col_sums = AlignedBytes(batches * out.panels * qmm_panel_cols * std::int64_t(sizeof(std::int64_t)));
  return out;
}

bool pack_panels(PackedPanels& out, std::int64_t batch, const void* data, std::int64_t row_stride,
                 std::int64_t col_stride, std::int64_t p0, std::int64_t p1) {
  bool fits = true;
  std::int64_t* sums = out.col_sums.as<std::int64_t>() + batch * out.panels * qmm_panel_cols;
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
        const int positive = std::max(0, int(v0)) + std::max(0, int(v1));
        const int negative = std::max(0, -int(v0)) + std::max(0, -int(v1));
        fits = fits && positive <= 128 && negative <= 128;
      }
      sums[n0 + c] = sum;
    }
  }
  return fits;
}

PackedRows::PackedRows(std::int64_t rows_, std::int64_t kp_)
    : rows(round_up(rows_, qmm_row_align)), kp(kp_), bytes(rows * kp),
      row_sums(rows * std::int64_t(sizeof(std::int64_t))) {}

void pack_rows(PackedRows& out, const void* data, DataType type, std::int64_t K,
               std::int64_t row_stride, std::int64_t col_stride, std::int64_t r0, std::int64_t r1) {
  const std::uint8_t flip = type == DataType::int8 ? 0x80 : 0x00;
  const auto* src = static_cast<const std::uint8_t*>(data);
  for (std::int64_t r = r0; r < r1; ++r) {
    std::uint8_t* dst = out.row(r);
    const std::uint8_t* s = src + r * row_stride;
    std::int64_t sum = 0;
    if (col_stride == 1) {
      for (std::int64_t k = 0; k < K; ++k) {
        dst[k] = s[k] ^ flip;
        sum += dst[k];
      }
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
