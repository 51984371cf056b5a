// QuantizedLinearMatMul: definition, validation, requantization, reference.
//
//   acc[m][n] = sum_k (A[m][k] - za[m]) * (B[k][n] - zb[n])          (exact integer)
//   y[m][n]   = clamp(RNE(acc[m][n] * multiplier[m][n]) + zy[m], qmin, qmax)
//   multiplier[m][n] = float32(float32(sa[m] * sb[n]) / sy[m])
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "hetkern/operators.hpp"

namespace hk::detail {

/// A matrix inside a batched tensor: element (b0, b1, r, c) is at
/// data + b0*batch_stride[0] + b1*batch_stride[1] + r*row_stride + c*col_stride (elements).
struct MatrixView {
  DataType dtype = DataType::uint8;
  const void* data = nullptr;
  std::int64_t batch_stride[2] = {0, 0};
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 0;

  /// Element offset of batch t = b0 * batch1 + b1 (batch1: the size of the second batch dimension).
  std::int64_t batch_offset(std::int64_t t, std::int64_t batch1) const {
    return (t / batch1) * batch_stride[0] + (t % batch1) * batch_stride[1];
  }
};

/// The matrix view of a rank 2..4 tensor (absent batch dimensions: stride 0).
MatrixView matrix_view(const ConstTensor& t);

/// The two batch sizes of a rank 2..4 tensor, right-aligned (absent ones: 1).
void batch_sizes(const TensorDesc& d, std::int64_t (&sizes)[2]);

/// Quantization parameters, read once during validation: one value, or one per row / column.
struct QuantParams {
  std::vector<float> a_scale, b_scale, out_scale;      // size 1 or M / N / M
  std::vector<std::int32_t> a_zero, b_zero, out_zero;  // size 1 or M / N / M (absent: {0})

  static float at(const std::vector<float>& v, std::int64_t i) { return v.size() == 1 ? v[0] : v[i]; }
  static std::int32_t at(const std::vector<std::int32_t>& v, std::int64_t i) {
    return v.size() == 1 ? v[0] : v[i];
  }
};

struct PackedPanels;

/// A validated call in normalized form: two batch dimensions (size 1 where absent).
struct QmmProblem {
  std::int64_t batch[2] = {1, 1};
  std::int64_t M = 0, N = 0, K = 0;
  MatrixView a, b;
  DataType out_type = DataType::uint8;
  void* out = nullptr;
  std::int64_t out_batch_stride[2] = {0, 0};
  std::int64_t out_row_stride = 0, out_col_stride = 0;
  QuantParams q;
  const PackedPanels* packed_b = nullptr;  // B packed by the caller (b.data is then null)
};

/// A matrix operand's type must be int8 or uint8: hk::Error(Errc::invalid_type) naming `op` and
/// `name` otherwise (validate's rule, which pack_b applies to B too).
void check_matrix_type(std::string_view op, std::string_view name, DataType t);

/// Every rule of the spec; throws hk::Error and touches nothing when one is broken.
QmmProblem validate(const QuantizedMatMulArgs& args, const Tensor& output);

/// The canonical multiplier float32(float32(sa * sb) / sy).
inline float requant_multiplier(float sa, float sb, float sy) {
  const float product = sa * sb;
  return product / sy;
}

/// RNE(acc * multiplier) + zero_point, saturated to the output type, computed exactly for every
/// 64-bit acc and every finite non-negative multiplier.
std::int32_t requantize(std::int64_t acc, float multiplier, std::int32_t zero_point, DataType out);

/// Stores a requantized value as the output element type.
inline void store_quantized(void* out, std::int64_t offset, DataType type, std::int32_t v) {
  if (type == DataType::uint8)
    static_cast<std::uint8_t*>(out)[offset] = static_cast<std::uint8_t>(v);
  else
    static_cast<std::int8_t*>(out)[offset] = static_cast<std::int8_t>(v);
}

/// Reads element i of an int8 or uint8 array as int32.
inline std::int32_t load_quantized(const void* p, std::int64_t i, DataType type) {
  return type == DataType::uint8 ? std::int32_t(static_cast<const std::uint8_t*>(p)[i])
                                 : std::int32_t(static_cast<const std::int8_t*>(p)[i]);
}

/// The executable form of the specification: 64-bit accumulation, one output at a time.
void reference_qmm(const QmmProblem& p);

}  // namespace hk::detail
