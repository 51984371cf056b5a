// The QuantizedLinearMatMul kernels in plain C++: any CPU, the same layouts.
#include "schedules/qmm_kernels.hpp"

namespace hk::detail {

void qmm_kernel_portable(const QmmTile& t) {
  for (std::int64_t r = 0; r < t.rows; ++r) {
    const std::uint8_t* a = t.a + r * t.lda;
    for (std::int64_t p = 0; p < t.panels; ++p) {
      std::int32_t acc[16] = {};
      const std::int8_t* b = t.b + p * t.panel_bytes;
      for (std::int64_t g = 0; g < t.groups; ++g)
        for (int j = 0; j < 16; ++j)
          for (int q = 0; q < 4; ++q) acc[j] += std::int32_t(a[g * 4 + q]) * b[g * 64 + j * 4 + q];
      std::int32_t* c = t.c + r * t.ldc + p * 16;
      for (int j = 0; j < 16; ++j) c[j] = t.accumulate ? c[j] + acc[j] : acc[j];
    }
  }
}

void qmm_dots_portable(const QmmDotsTile& t) {
  for (std::int64_t j = 0; j < t.cols; ++j) {
    const std::uint8_t* b = t.b + j * t.ldb;
    std::int32_t sum = 0;
    for (std::int64_t k = 0; k < t.depth; ++k) sum += std::int8_t(b[k] ^ t.flip);
    t.col_sums[j] = t.accumulate ? t.col_sums[j] + sum : sum;
    for (std::int64_t r = 0; r < t.rows; ++r) {
      const std::uint8_t* a = t.a + r * t.lda;
      std::int32_t acc = 0;
      for (std::int64_t k = 0; k < t.depth; ++k) acc += std::int32_t(a[k]) * std::int8_t(b[k] ^ t.flip);
      std::int32_t& c = t.c[r * t.ldc + j];
      c = t.accumulate ? c + acc : acc;
    }
  }
}

}  // namespace hk::detail
