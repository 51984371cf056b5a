// The QuantizedLinearMatMul epilogue. The accumulator dot - beta*rowsum - alpha*(colsum - K*beta)
// is exact in double while K < 2^30 (every term stays below 2^53), and one fused multiply-add then
// rounds acc * multiplier exactly (requantize_biased): blocks of int32 dot products take that
// vectorizable path, blocks of int64 ones (deeper than an int32 block holds) the exact int64 path.
// The common blocks go through float32 first, exact where |acc| <= 2^24, rows beyond through double.
#include "schedules/qmm_epilogue.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

#include "algorithms/requantize.hpp"
#include "hetkern/info.hpp"
#include "schedules/qmm_pack.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t double_path_max_k = std::int64_t(1) << 30;

// Depth up to which every accumulator fits int32 (255 * 255 * K < 2^31), so that dot - alpha *
// colsum computed modulo 2^32 is the accumulator itself.
constexpr std::int64_t int32_acc_max_k = std::numeric_limits<std::int32_t>::max() / (255 * 255);

// Accumulators up to this magnitude are float32 values.
constexpr std::uint32_t float_exact_acc = std::uint32_t(1) << 24;

// One row through the double path into int32 values (the low half of each biased double). `beta`
// is null when every column's beta is 0 (zb at B's shift, the common case), which saves a term.
[[gnu::always_inline]] inline void requantize_row(
    const std::int32_t* dots, std::int64_t cols, double alpha, double row_sum, const double* beta,
    const double* col_term, const double* multiplier, double zero_point, double low, double high,
    std::int32_t* value) {
  for (std::int64_t j = 0; j < cols; ++j) {
    const double acc = double(dots[j]) - (beta ? beta[j] * row_sum : 0.0) - alpha * col_term[j];
    value[j] = std::int32_t(std::uint32_t(std::bit_cast<std::uint64_t>(
        requantize_biased(acc, multiplier[j], zero_point, low, high))));
  }
}

// Every row of a block at once, for the common case: every beta 0, one multiplier per column for
// all rows, and a row-contiguous 8-bit output. `alpha` and `zero_point` are per row. One call per
// block, where a call per row and step costs as much as the arithmetic of a narrow block (64^3).
// Each output is one fused multiply-add, an add and a clamp, stored as its low byte.
[[gnu::always_inline]] inline void requantize_rows_common(
    const std::int32_t* dots, std::int64_t ld, std::int64_t rows, std::int64_t cols, const double* alpha,
    const double* col_term, const double* multiplier, const double* zero_point, double low, double high,
    char* out, std::int64_t out_row_stride) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int32_t* d = dots + i * ld;
    const double a = alpha[i], z = zero_point[i];
    char* y = out + i * out_row_stride;
    for (std::int64_t j = 0; j < cols; ++j)
      y[j] = char(std::bit_cast<std::uint64_t>(
          requantize_biased(double(d[j]) - a * col_term[j], multiplier[j], z, low, high)));
  }
}

// One row of requantize_rows_float; `col_term` holds alpha * colsum already unless times_alpha.
template <bool times_alpha>
[[gnu::always_inline]] inline bool requantize_row_float(const std::int32_t* d, std::int64_t cols, std::uint32_t a,
                                                        const std::uint32_t* col_term, const float* multiplier,
                                                        float z, float low, float high, char* y) {
  bool beyond = false;
  for (std::int64_t j = 0; j < cols; ++j) {
    const std::uint32_t acc = std::uint32_t(d[j]) - (times_alpha ? a * col_term[j] : col_term[j]);
    beyond |= acc + float_exact_acc > 2 * float_exact_acc;
    y[j] = char(std::bit_cast<std::uint32_t>(
        requantize_biased_float(float(std::int32_t(acc)), multiplier[j], z, low, high)));
  }
  return beyond;
}

// requantize_rows_common in float32 (requantize_biased_float), where K <= int32_acc_max_k: sixteen
// outputs a vector where double has eight. The accumulator is formed modulo 2^32, exact by the
// depth bound. `alpha` is per row, or null where `col_term` holds the one alpha times colsum. A
// row where some |acc| exceeds 2^24 is flagged in `redo`, its bytes then wrong.
[[gnu::always_inline]] inline void requantize_rows_float(
    const std::int32_t* dots, std::int64_t ld, std::int64_t rows, std::int64_t cols, const std::uint32_t* alpha,
    const std::uint32_t* col_term, const float* multiplier, const float* zero_point, float low, float high,
    char* out, std::int64_t out_row_stride, std::uint8_t* redo) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int32_t* d = dots + i * ld;
    char* y = out + i * out_row_stride;
    redo[i] = alpha ? requantize_row_float<true>(d, cols, alpha[i], col_term, multiplier, zero_point[i], low, high, y)
                    : requantize_row_float<false>(d, cols, 0, col_term, multiplier, zero_point[i], low, high, y);
  }
}

// Values already clamped to the output type's range, so the narrowing is exact.
[[gnu::always_inline]] inline void store_row(
    const QmmProblem& p, std::int64_t offset, const std::int32_t* value, std::int64_t cols) {
  if (p.out_col_stride == 1 && p.out_type == DataType::uint8) {
    std::uint8_t* y = static_cast<std::uint8_t*>(p.out) + offset;
    for (std::int64_t j = 0; j < cols; ++j) y[j] = std::uint8_t(value[j]);
  } else if (p.out_col_stride == 1) {
    std::int8_t* y = static_cast<std::int8_t*>(p.out) + offset;
    for (std::int64_t j = 0; j < cols; ++j) y[j] = std::int8_t(value[j]);
  } else {
    for (std::int64_t j = 0; j < cols; ++j)
      store_quantized(p.out, offset + j * p.out_col_stride, p.out_type, value[j]);
  }
}

// `body` compiled for each level the library dispatches on, run at active_isa(): hk::set_max_isa
// caps the epilogue as it caps the kernels, and the tests reach every level.
template <auto body>
struct Levels;

template <class... P, void (*body)(P...)>
struct Levels<body> {
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c"))) static void avx512(P... args) {
    body(args...);
  }
  __attribute__((target("avx2,fma,f16c"))) static void avx2(P... args) { body(args...); }
  static void run(P... args) {
#if defined(__x86_64__)
    const Isa isa = active_isa();
    if (isa >= Isa::avx512) return avx512(args...);
    if (isa >= Isa::avx2) return avx2(args...);
#endif
    body(args...);
  }
};

template <auto body, class... Args>
void at_isa(Args&&... args) {
  Levels<body>::run(std::forward<Args>(args)...);
}

}  // namespace

void QmmEpilogueScratch::reserve(std::int64_t rows, std::int64_t cols) {
  if (alpha.size() < std::size_t(rows)) {
    alpha.resize(std::size_t(rows));
    zero_point.resize(std::size_t(rows));
    alpha32.resize(std::size_t(rows));
    zero_point32.resize(std::size_t(rows));
    redo.resize(std::size_t(rows));
  }
  if (multiplier.size() >= std::size_t(cols)) return;
  multiplier.resize(std::size_t(cols));
  multiplier32.resize(std::size_t(cols));
  col_term32.resize(std::size_t(cols));
  beta.resize(std::size_t(cols));
  col_term.resize(std::size_t(cols));
  value.resize(std::size_t(cols));
}

void requantize_block(const QmmProblem& p, const QmmBlockResult& r, QmmEpilogueScratch& s) {
  const QuantParams& q = p.q;
  const std::int32_t ca = a_shift(p.a), cb = b_shift(p.b);
  const float qmin = p.out_type == DataType::uint8 ? 0.0f : -128.0f;
  const float qmax = p.out_type == DataType::uint8 ? 255.0f : 127.0f;
  const double low = round_bias + qmin, high = round_bias + qmax;
  const bool fast = r.dots && p.K < double_path_max_k;
  const bool per_column_scale = q.b_scale.size() > 1;
  const bool one_zb = q.b_zero.size() == 1;
  const std::int32_t* zb = q.b_zero.data() + (one_zb ? 0 : r.j0);
  const bool betas_zero = std::all_of(zb, zb + (one_zb ? 1 : r.cols), [cb](std::int32_t z) { return z == cb; });
  // The double path's column terms, which the float path needs only for the rows it hands back.
  const auto double_columns = [&] {
    for (std::int64_t j = 0; j < r.cols; ++j) {
      const std::int64_t beta = std::int64_t(QuantParams::at(q.b_zero, r.j0 + j)) - cb;
      s.beta[j] = double(beta);
      s.col_term[j] = double(r.col_sums[j] - p.K * beta);
    }
  };
  if (fast && betas_zero && q.a_scale.size() == 1 && q.out_scale.size() == 1 && p.out_col_stride == 1) {
    const bool narrow = p.K <= int32_acc_max_k, one_alpha = q.a_zero.size() <= 1;
    const float one_multiplier = requant_multiplier(q.a_scale[0], q.b_scale[0], q.out_scale[0]);
    const auto multiplier = [&](std::int64_t j) {
      return per_column_scale ? requant_multiplier(q.a_scale[0], q.b_scale[std::size_t(r.j0 + j)], q.out_scale[0])
                              : one_multiplier;
    };
    const auto double_setup = [&] {
      double_columns();
      for (std::int64_t j = 0; j < r.cols; ++j) s.multiplier[j] = multiplier(j);
      for (std::int64_t i = 0; i < r.rows; ++i) {
        s.alpha[i] = double(std::int64_t(ca) + QuantParams::at(q.a_zero, r.i0 + i));
        s.zero_point[i] = double(QuantParams::at(q.out_zero, r.i0 + i));
      }
    };
    // Both 8-bit types store the low byte of a value already within their range.
    char* const out = static_cast<char*>(p.out) + r.out_offset + r.i0 * p.out_row_stride + r.j0;
    if (!narrow) {
      double_setup();
      at_isa<requantize_rows_common>(r.dots, r.ld, r.rows, r.cols, s.alpha.data(), s.col_term.data(),
                                     s.multiplier.data(), s.zero_point.data(), low, high, out, p.out_row_stride);
      return;
    }
    for (std::int64_t i = 0; i < r.rows; ++i) {
      s.alpha32[i] = std::uint32_t(std::int64_t(ca) + QuantParams::at(q.a_zero, r.i0 + i));
      s.zero_point32[i] = float(QuantParams::at(q.out_zero, r.i0 + i));
    }
    // Modulo 2^32, as the float path forms the accumulator.
    const std::uint32_t times = one_alpha ? s.alpha32[0] : 1;
    for (std::int64_t j = 0; j < r.cols; ++j) {
      s.multiplier32[j] = multiplier(j);
      s.col_term32[j] = times * std::uint32_t(r.col_sums[j]);
    }
    at_isa<requantize_rows_float>(r.dots, r.ld, r.rows, r.cols, one_alpha ? nullptr : s.alpha32.data(),
                                  s.col_term32.data(), s.multiplier32.data(), s.zero_point32.data(),
                                  round_bias_float + qmin, round_bias_float + qmax, out, p.out_row_stride,
                                  s.redo.data());
    bool set_up = false;
    for (std::int64_t i = 0; i < r.rows; ++i) {
      if (!s.redo[i]) continue;
      if (!set_up) double_setup(), set_up = true;
      at_isa<requantize_rows_common>(r.dots + i * r.ld, r.ld, 1, r.cols, s.alpha.data() + i, s.col_term.data(),
                                     s.multiplier.data(), s.zero_point.data() + i, low, high,
                                     out + i * p.out_row_stride, p.out_row_stride);
    }
    return;
  }
  double_columns();
  for (std::int64_t i = 0; i < r.rows; ++i) {
    const std::int64_t m = r.i0 + i;
    const float sa = QuantParams::at(q.a_scale, m), sy = QuantParams::at(q.out_scale, m);
    if (per_column_scale) {
      const float* sb = q.b_scale.data() + r.j0;
      for (std::int64_t j = 0; j < r.cols; ++j) s.multiplier[j] = requant_multiplier(sa, sb[j], sy);
    } else if (i == 0 || q.a_scale.size() > 1 || q.out_scale.size() > 1) {
      std::fill_n(s.multiplier.begin(), r.cols, double(requant_multiplier(sa, q.b_scale[0], sy)));
    }
    const std::int64_t alpha = std::int64_t(ca) + QuantParams::at(q.a_zero, m);
    const std::int32_t zy = QuantParams::at(q.out_zero, m);
    const std::int64_t out_row = r.out_offset + m * p.out_row_stride + r.j0 * p.out_col_stride;
    if (fast) {
      at_isa<requantize_row>(r.dots + i * r.ld, r.cols, double(alpha), double(r.row_sums[i]),
                             betas_zero ? nullptr : s.beta.data(), s.col_term.data(), s.multiplier.data(),
                             double(zy), low, high, s.value.data());
      at_isa<store_row>(p, out_row, s.value.data(), r.cols);
      continue;
    }
    for (std::int64_t j = 0; j < r.cols; ++j) {
      const std::int64_t dot = r.dots ? r.dots[i * r.ld + j] : r.wide[i * r.ld + j];
      const std::int64_t beta = std::int64_t(s.beta[j]);
      const std::int64_t acc =
          dot - beta * r.row_sums[i] - alpha * (r.col_sums[j] - p.K * beta);
      store_quantized(p.out, out_row + j * p.out_col_stride, p.out_type,
                      requantize(acc, float(s.multiplier[j]), zy, p.out_type));
    }
  }
}

}  // namespace hk::detail
