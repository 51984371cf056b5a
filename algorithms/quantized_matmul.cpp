// Validation, requantization and reference implementation of QuantizedLinearMatMul.
#include "algorithms/quantized_matmul.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "algorithms/requantize.hpp"
#include "algorithms/tensor_checks.hpp"
#include "hetkern/error.hpp"

namespace hk::detail {
namespace {

constexpr const char* op_name = "quantized_linear_matmul";
constexpr std::int64_t max_exact_depth = std::int64_t(1) << 47;

bool is_8bit(DataType t) { return t == DataType::int8 || t == DataType::uint8; }

std::string type_text(DataType t) { return std::string(name_of(t)); }

// Which values a parameter tensor may hold besides the per-tensor one.
enum class Along { rows, columns };

template <class V>
std::vector<V> read_param(const std::string& name, const ConstTensor& t, Along along,
                          std::int64_t count, const char* count_name) {
  const TensorDesc& d = t.desc;
  check_tensor(op_name, name, d, t.data, 1, 4);
  const int r = d.rank();
  for (int k = 0; k + 2 < r; ++k)
    if (d.size(k) != 1)
      throw Error(Errc::invalid_shape, op_name, name,
                  "sizes " + d.to_string() + " have a leading dimension other than 1");
  const std::int64_t rows = r >= 2 ? d.size(r - 2) : 1, cols = d.size(r - 1);
  const std::int64_t row_stride = r >= 2 ? d.stride(r - 2) : 0, col_stride = d.stride(r - 1);
  std::int64_t n = 1, stride = 0;
  if (rows == 1 && cols == 1) {
    n = 1;
  } else if (along == Along::rows && rows == count && cols == 1) {
    n = count, stride = row_stride;
  } else if (along == Along::columns && rows == 1 && cols == count) {
    n = count, stride = col_stride;
  } else {
    const std::string per = along == Along::rows
                                ? "per-row {" + std::string(count_name) + ",1}"
                                : "per-column {1," + std::string(count_name) + "}";
    throw Error(Errc::invalid_shape, op_name, name,
                "sizes " + d.to_string() + " are neither per-tensor {1} nor " + per + " with " +
                    count_name + " = " + std::to_string(count));
  }
  std::vector<V> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<V, float>) {
      // Callers' scale pointers need not be aligned. float16 widens to float32 exactly.
      const std::byte* at = static_cast<const std::byte*>(t.data) + i * stride * std::int64_t(size_of(d.dtype()));
      if (d.dtype() == DataType::float16) {
        _Float16 h;
        std::memcpy(&h, at, sizeof h);
        values[i] = float(h);
      } else {
        std::memcpy(&values[i], at, sizeof(float));
      }
    } else {
      values[i] = load_quantized(t.data, i * stride, d.dtype());
    }
  }
  return values;
}

// A float in enough digits to name it exactly: std::to_string's fixed six decimals wrote a small
// negative scale as "-0.000000".
std::string float_text(float v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", double(v));
  return text;
}

std::vector<float> read_scale(const std::string& name, const ConstTensor& t, Along along,
                              std::int64_t count, const char* count_name) {
  if (t.desc.dtype() != DataType::float32 && t.desc.dtype() != DataType::float16)
    throw Error(Errc::invalid_type, op_name, name,
                "type " + type_text(t.desc.dtype()) + " is not float32 or float16");
  auto v = read_param<float>(name, t, along, count, count_name);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!(v[i] > 0.0f) || !std::isfinite(v[i]))
      throw Error(Errc::invalid_parameter, op_name, name,
                  "value " + float_text(v[i]) + " at index " + std::to_string(i) +
                      " is not a positive finite number");
  return v;
}

std::vector<std::int32_t> read_zero_point(const std::string& name,
                                          const std::optional<ConstTensor>& t, DataType expected,
                                          const std::string& owner, Along along,
                                          std::int64_t count, const char* count_name) {
  if (!t) return {0};
  if (t->desc.dtype() != expected)
    throw Error(Errc::invalid_type, op_name, name,
                "type " + type_text(t->desc.dtype()) + " differs from " + owner + "'s " +
                    type_text(expected));
  return read_param<std::int32_t>(name, *t, along, count, count_name);
}

// Strides of the batch, row and column dimensions of a rank 2..4 tensor (absent batches: 0).
void matrix_strides(const TensorDesc& d, std::int64_t (&batch)[2], std::int64_t& row,
                    std::int64_t& col) {
  const int r = d.rank();
  for (int k = 0; k < r - 2; ++k) batch[2 - (r - 2) + k] = d.stride(k);
  row = d.stride(r - 2);
  col = d.stride(r - 1);
}

// An operand's batch dimension of size 1 repeats for every batch of the output: stride 0.
MatrixView broadcast_view(MatrixView v, const std::int64_t (&sizes)[2]) {
  for (int k = 0; k < 2; ++k)
    if (sizes[k] == 1) v.batch_stride[k] = 0;
  return v;
}

void check_disjoint(const Tensor& out, const std::string& name, const ConstTensor& in) {
  if (spans_overlap(out.desc, out.data, in.desc, in.data))
    throw Error(Errc::overlap, op_name, "output",
                "overlaps " + name + " (QuantizedLinearMatMul never runs in place)");
}

}  // namespace

MatrixView matrix_view(const ConstTensor& t) {
  MatrixView v;
  v.dtype = t.desc.dtype();
  v.data = t.data;
  matrix_strides(t.desc, v.batch_stride, v.row_stride, v.col_stride);
  return v;
}

void batch_sizes(const TensorDesc& d, std::int64_t (&sizes)[2]) {
  const int r = d.rank();
  for (int k = 0; k < r - 2; ++k) sizes[2 - (r - 2) + k] = d.size(k);
}

void check_matrix_type(std::string_view op, std::string_view name, DataType t) {
  if (!is_8bit(t))
    throw Error(Errc::invalid_type, std::string(op), std::string(name), "type " + type_text(t) + " is not int8 or uint8");
}

QmmProblem validate(const QuantizedMatMulArgs& args, const Tensor& output) {
  if (args.packed_b && args.packed_b->empty())
    throw Error(Errc::invalid_parameter, op_name, "packed_b", "is empty (make it with pack_b)");
  const TensorDesc &a = args.a.desc, &y = output.desc;
  const TensorDesc& b = args.packed_b ? args.packed_b->desc() : args.b.desc;
  check_matrix_type(op_name, "a", a.dtype());
  check_matrix_type(op_name, "b", b.dtype());
  check_matrix_type(op_name, "output", y.dtype());
  check_tensor(op_name, "a", a, args.a.data, 2, 4);
  if (!args.packed_b) check_tensor(op_name, "b", b, args.b.data, 2, 4);
  check_output(op_name, "output", y, output.data, 2, 4);
  // Batch dimensions broadcast as in numpy.matmul: right-aligned, each pair equal or one of them
  // 1, and the output has the larger rank and the broadcast sizes.
  if (y.rank() != std::max(a.rank(), b.rank()))
    throw Error(Errc::invalid_shape, op_name, "output",
                "rank " + std::to_string(y.rank()) + " differs from the larger of a's " +
                    std::to_string(a.rank()) + " and b's " + std::to_string(b.rank()));
  std::int64_t a_batch[2] = {1, 1}, b_batch[2] = {1, 1}, y_batch[2] = {1, 1};
  batch_sizes(a, a_batch);
  batch_sizes(b, b_batch);
  batch_sizes(y, y_batch);
  for (int k = 0; k < 2; ++k) {
    if (a_batch[k] != b_batch[k] && a_batch[k] != 1 && b_batch[k] != 1)
      throw Error(Errc::invalid_shape, op_name, "b",
                  "batch sizes of " + b.to_string() + " do not broadcast against a's " + a.to_string() +
                      " (right-aligned, each pair equal or one of them 1)");
    if (y_batch[k] != std::max(a_batch[k], b_batch[k]))
      throw Error(Errc::invalid_shape, op_name, "output",
                  "batch sizes of " + y.to_string() + " differ from those of a " + a.to_string() +
                      " and b " + b.to_string() + " broadcast together");
  }
  // A packed B holds one matrix or one per output batch: its batches are indexed by the output's.
  if (args.packed_b && b_batch[0] * b_batch[1] != 1 && (b_batch[0] != y_batch[0] || b_batch[1] != y_batch[1])) {
    const MatrixView packed = matrix_view(ConstTensor{b, nullptr});
    if (packed.batch_stride[0] != 0 || packed.batch_stride[1] != 0)
      throw Error(Errc::invalid_shape, op_name, "packed_b",
                  "batch sizes of " + b.to_string() + " broadcast against a's " + a.to_string() +
                      ": pass b unpacked, or pack one matrix per output batch");
  }
  const int r = a.rank(), rb = b.rank(), ry = y.rank();
  QmmProblem p;
  p.M = a.size(r - 2);
  p.K = a.size(r - 1);
  p.N = b.size(rb - 1);
  if (b.size(rb - 2) != p.K)
    throw Error(Errc::invalid_shape, op_name, "b",
                "sizes " + b.to_string() + " need K = " + std::to_string(p.K) +
                    " rows to match a " + a.to_string());
  // Each product (A - za)(B - zb) is below 2^16 in magnitude, so a sum of K of them fits the
  // exact 64-bit accumulation only while K < 2^47.
  if (p.K >= max_exact_depth)
    throw Error(Errc::invalid_shape, op_name, "a",
                "K = " + std::to_string(p.K) + " reaches 2^47, beyond which the exact sum over K "
                "could overflow 64 bits");
  if (y.size(ry - 2) != p.M || y.size(ry - 1) != p.N)
    throw Error(Errc::invalid_shape, op_name, "output",
                "sizes " + y.to_string() + " differ from {..., M, N} = {..., " +
                    std::to_string(p.M) + ", " + std::to_string(p.N) + "}");
  p.batch[0] = y_batch[0];
  p.batch[1] = y_batch[1];

  QuantParams& q = p.q;
  q.a_scale = read_scale("a_scale", args.a_scale, Along::rows, p.M, "M");
  q.b_scale = read_scale("b_scale", args.b_scale, Along::columns, p.N, "N");
  q.out_scale = read_scale("output_scale", args.output_scale, Along::rows, p.M, "M");
  q.a_zero = read_zero_point("a_zero_point", args.a_zero_point, a.dtype(), "a", Along::rows, p.M, "M");
  q.b_zero = read_zero_point("b_zero_point", args.b_zero_point, b.dtype(), "b", Along::columns, p.N, "N");
  q.out_zero = read_zero_point("output_zero_point", args.output_zero_point, y.dtype(), "output",
                               Along::rows, p.M, "M");

  // The multiplier grows with sb, so the largest sb decides whether any multiplier overflows.
  float max_b_scale = 0.0f;
  for (float s : q.b_scale) max_b_scale = std::fmax(max_b_scale, s);
  const auto scale_rows = std::int64_t(std::max(q.a_scale.size(), q.out_scale.size()));
  for (std::int64_t m = 0; m < scale_rows; ++m) {
    const float mult = requant_multiplier(QuantParams::at(q.a_scale, m), max_b_scale,
                                          QuantParams::at(q.out_scale, m));
    if (!std::isfinite(mult))
      throw Error(Errc::invalid_parameter, op_name, "output_scale",
                  "multiplier a_scale * b_scale / output_scale overflows float32 at row " +
                      std::to_string(m));
  }

  check_disjoint(output, "a", args.a);
  if (!args.packed_b) check_disjoint(output, "b", args.b);
  check_disjoint(output, "a_scale", args.a_scale);
  check_disjoint(output, "b_scale", args.b_scale);
  check_disjoint(output, "output_scale", args.output_scale);
  if (args.a_zero_point) check_disjoint(output, "a_zero_point", *args.a_zero_point);
  if (args.b_zero_point) check_disjoint(output, "b_zero_point", *args.b_zero_point);
  if (args.output_zero_point) check_disjoint(output, "output_zero_point", *args.output_zero_point);

  p.a = broadcast_view(matrix_view(args.a), a_batch);
  p.b = broadcast_view(matrix_view(args.packed_b ? ConstTensor{b, nullptr} : args.b), b_batch);
  if (args.packed_b) p.packed_b = packed_panels(*args.packed_b);
  p.out_type = y.dtype();
  p.out = output.data;
  matrix_strides(y, p.out_batch_stride, p.out_row_stride, p.out_col_stride);
  return p;
}

std::int32_t requantize(std::int64_t acc, float multiplier, std::int32_t zero_point, DataType out) {
  return out == DataType::uint8 ? requantize_exact(acc, multiplier, zero_point, 0, 255)
                                : requantize_exact(acc, multiplier, zero_point, -128, 127);
}

void reference_qmm(const QmmProblem& p) {
  const QuantParams& q = p.q;
  for (std::int64_t b0 = 0; b0 < p.batch[0]; ++b0)
    for (std::int64_t b1 = 0; b1 < p.batch[1]; ++b1) {
      const std::int64_t ao = b0 * p.a.batch_stride[0] + b1 * p.a.batch_stride[1];
      const std::int64_t bo = b0 * p.b.batch_stride[0] + b1 * p.b.batch_stride[1];
      const std::int64_t yo = b0 * p.out_batch_stride[0] + b1 * p.out_batch_stride[1];
      for (std::int64_t m = 0; m < p.M; ++m)
        for (std::int64_t n = 0; n < p.N; ++n) {
          const std::int32_t za = QuantParams::at(q.a_zero, m), zb = QuantParams::at(q.b_zero, n);
          std::int64_t acc = 0;
          for (std::int64_t k = 0; k < p.K; ++k) {
            const std::int32_t x = load_quantized(p.a.data, ao + m * p.a.row_stride + k * p.a.col_stride, p.a.dtype);
            const std::int32_t w = load_quantized(p.b.data, bo + k * p.b.row_stride + n * p.b.col_stride, p.b.dtype);
            acc += std::int64_t(x - za) * (w - zb);
          }
          const float mult = requant_multiplier(QuantParams::at(q.a_scale, m), QuantParams::at(q.b_scale, n),
                                                QuantParams::at(q.out_scale, m));
          store_quantized(p.out, yo + m * p.out_row_stride + n * p.out_col_stride, p.out_type,
                          requantize(acc, mult, QuantParams::at(q.out_zero, m), p.out_type));
        }
    }
}

}  // namespace hk::detail
