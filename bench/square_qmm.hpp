// The offload benchmarks' matmul: u8 x s8 -> u8 of n x n x n with patterned operands, per-tensor
// quantization (A's and the output's zero points 128) and the arguments over any operand kind
// (host tensors or device buffers).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hetkern/hetkern.hpp"

namespace hk::bench {

struct SquareQmm {
  std::int64_t n;
  TensorDesc a_desc, b_desc;  // B row-major or column-major
  std::vector<std::uint8_t> a;
  std::vector<std::int8_t> b;
  float a_scale = 0.02f, b_scale = 0.01f, out_scale;
  std::uint8_t a_zero = 128, out_zero = 128;

  SquareQmm(std::int64_t side, float output_scale, bool column_major_b = false)
      : n(side),
        a_desc(DataType::uint8, {side, side}),
        b_desc(column_major_b ? TensorDesc(DataType::int8, {side, side}, {1, side})
                              : TensorDesc(DataType::int8, {side, side})),
        a(elements()),
        b(elements()),
        out_scale(output_scale) {
    for (std::size_t i = 0; i < elements(); ++i) {
      a[i] = std::uint8_t(i * 7 + 3);
      b[i] = std::int8_t(i * 13 + 1);
    }
  }

  std::size_t elements() const { return std::size_t(n * n); }
  TensorDesc out_desc() const { return a_desc; }

  /// The call's arguments with A and B given as `a_operand` and `b_operand`.
  template <class Operand> BasicQuantizedMatMulArgs<Operand> args(Operand a_operand, Operand b_operand) const {
    const TensorDesc scalar_f(DataType::float32, {1}), scalar_u8(DataType::uint8, {1});
    return {.a = a_operand,
            .a_scale = {scalar_f, &a_scale},
            .a_zero_point = ConstTensor{scalar_u8, &a_zero},
            .b = b_operand,
            .b_scale = {scalar_f, &b_scale},
            .b_zero_point = std::nullopt,
            .output_scale = {scalar_f, &out_scale},
            .output_zero_point = ConstTensor{scalar_u8, &out_zero}};
  }
};

}  // namespace hk::bench
