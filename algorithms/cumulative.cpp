// Validation and reference implementation of the cumulative operators.
#include "algorithms/cumulative.hpp"

#include <array>

#include "algorithms/scan_types.hpp"
#include "algorithms/tensor_checks.hpp"
#include "hetkern/error.hpp"

namespace hk::detail {
namespace {

bool is_scan_type(DataType t) {
  switch (t) {
    case DataType::float32:
    case DataType::float16:
    case DataType::float64:
    case DataType::bfloat16:
    case DataType::int32:
    case DataType::uint32:
    case DataType::int64:
    case DataType::uint64: return true;
    default: return false;
  }
}

template <class T, class Op> void reference_typed(const CumulativeCall& call) {
  using Acc = AccOf<T>;
  const TensorDesc& in = call.input.desc;
  const TensorDesc& out = call.output.desc;
  const int axis = call.options.axis, rank = in.rank();
  const std::int64_t length = in.size(axis);
  const bool reverse = call.options.direction == Direction::decreasing;
  const auto* x = static_cast<const T*>(call.input.data);
  auto* y = static_cast<T*>(call.output.data);

  std::array<std::int64_t, max_rank> index{};  // index[axis] stays 0: it walks the lines
  for (;;) {
    std::int64_t xo = 0, yo = 0;
    for (int d = 0; d < rank; ++d) {
      xo += index[d] * in.stride(d);
      yo += index[d] * out.stride(d);
    }
    Acc acc = Op::template identity<Acc>();
    for (std::int64_t q = 0; q < length; ++q) {
      const std::int64_t i = reverse ? length - 1 - q : q;
      const Acc t = widen(x[xo + i * in.stride(axis)]);
      T& dst = y[yo + i * out.stride(axis)];
      if (call.options.exclusive) {
        dst = narrow<T>(acc);
        acc = Op::apply(acc, t);
      } else {
        acc = q == 0 ? t : Op::apply(acc, t);
        dst = narrow<T>(acc);
      }
    }
    int d = rank - 1;
    for (; d >= 0; --d) {
      if (d == axis) continue;
      if (++index[d] < in.size(d)) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace

bool CumulativeCall::in_place() const {
  return is_exact_alias(input.desc, input.data, output.desc, output.data);
}

void validate(CumulativeCall& call) {
  // A view: the longer operator name would cost a heap allocation on every call.
  const std::string_view op = call.op_name();
  const TensorDesc& in = call.input.desc;
  const TensorDesc& out = call.output.desc;
  if (!is_scan_type(in.dtype()))
    throw Error(Errc::invalid_type, std::string(op), "input",
                "type " + std::string(name_of(in.dtype())) +
                    " is not one of float32, float16, float64, bfloat16, int32, uint32, int64, "
                    "uint64");
  if (out.dtype() != in.dtype())
    throw Error(Errc::invalid_type, std::string(op), "output",
                "type " + std::string(name_of(out.dtype())) + " differs from the input's " +
                    std::string(name_of(in.dtype())));
  check_tensor(op, "input", in, call.input.data);
  check_output(op, "output", out, call.output.data);
  if (out.rank() != in.rank())
    throw Error(Errc::invalid_shape, std::string(op), "output",
                "rank " + std::to_string(out.rank()) + " differs from the input's " +
                    std::to_string(in.rank()));
  for (int d = 0; d < in.rank(); ++d)
    if (out.size(d) != in.size(d))
      throw Error(Errc::invalid_shape, std::string(op), "output",
                  "sizes " + out.to_string() + " differ from the input's " + in.to_string());
  const int axis = call.options.axis;
  if (axis < -in.rank() || axis >= in.rank())
    throw Error(Errc::invalid_parameter, std::string(op), "axis",
                std::to_string(axis) + " is out of range for a rank-" + std::to_string(in.rank()) +
                    " tensor (" + std::to_string(-in.rank()) + " to " + std::to_string(in.rank() - 1) +
                    ", negative counting from the last)");
  if (call.options.direction != Direction::increasing &&
      call.options.direction != Direction::decreasing)
    throw Error(Errc::invalid_parameter, std::string(op), "direction", "is neither increasing nor decreasing");
  if (spans_overlap(in, call.input.data, out, call.output.data) && !call.in_place())
    throw Error(Errc::overlap, std::string(op), "output",
                "overlaps the input without being the same tensor (in-place needs the same "
                "data pointer, sizes and strides)");
  if (axis < 0) call.options.axis = axis + in.rank();
}

void reference_cumulative(const CumulativeCall& call) {
  visit_scan_type(call.input.desc.dtype(), [&](auto t) {
    using T = decltype(t);
    visit_combine(call.product, [&](auto op) { reference_typed<T, decltype(op)>(call); });
  });
}

}  // namespace hk::detail
