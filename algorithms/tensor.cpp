// TensorDesc construction and printing.
#include <sstream>

#include "hetkern/error.hpp"
#include "hetkern/tensor.hpp"

namespace hk {

TensorDesc::TensorDesc(DataType dtype, std::span<const std::int64_t> sizes,
                       std::span<const std::int64_t> strides)
    : dtype_(dtype) {
  if (sizes.size() > std::size_t(max_rank))
    throw Error(Errc::invalid_shape, "tensor", "sizes",
                "rank " + std::to_string(sizes.size()) + " exceeds the maximum of 8");
  if (!strides.empty() && strides.size() != sizes.size())
    throw Error(Errc::invalid_shape, "tensor", "strides",
                std::to_string(strides.size()) + " strides given for " +
                    std::to_string(sizes.size()) + " sizes");
  rank_ = int(sizes.size());
  for (int d = 0; d < rank_; ++d) sizes_[d] = sizes[d];
  if (!strides.empty()) {
    for (int d = 0; d < rank_; ++d) strides_[d] = strides[d];
    return;
  }
  // Unsigned arithmetic: a descriptor may carry sizes an operator will reject, without UB here.
  std::uint64_t running = 1;
  for (int d = rank_ - 1; d >= 0; --d) {
    strides_[d] = std::int64_t(running);
    running *= std::uint64_t(sizes_[d]);
  }
}

bool TensorDesc::is_packed() const noexcept {
  std::uint64_t running = 1;
  for (int d = rank_ - 1; d >= 0; --d) {
    if (sizes_[d] != 1 && strides_[d] != std::int64_t(running)) return false;
    running *= std::uint64_t(sizes_[d]);
  }
  return true;
}

std::int64_t TensorDesc::element_count() const noexcept {
  std::uint64_t n = 1;
  for (int d = 0; d < rank_; ++d) n *= std::uint64_t(sizes_[d]);
  return std::int64_t(n);
}

std::string TensorDesc::to_string() const {
  std::ostringstream s;
  s << name_of(dtype_) << '{';
  for (int d = 0; d < rank_; ++d) s << (d ? "," : "") << sizes_[d];
  s << '}';
  if (!is_packed()) {
    s << " strides {";
    for (int d = 0; d < rank_; ++d) s << (d ? "," : "") << strides_[d];
    s << '}';
  }
  return s.str();
}

std::optional<DataType> parse_data_type(std::string_view name) {
  struct Alias { std::string_view name; DataType type; };
  static constexpr Alias aliases[] = {
      {"float16", DataType::float16}, {"f16", DataType::float16},
      {"float32", DataType::float32}, {"f32", DataType::float32},
      {"float64", DataType::float64}, {"f64", DataType::float64},
      {"bfloat16", DataType::bfloat16}, {"bf16", DataType::bfloat16},
      {"int8", DataType::int8},       {"i8", DataType::int8},   {"s8", DataType::int8},
      {"uint8", DataType::uint8},     {"u8", DataType::uint8},
      {"int32", DataType::int32},     {"i32", DataType::int32}, {"s32", DataType::int32},
      {"uint32", DataType::uint32},   {"u32", DataType::uint32},
      {"int64", DataType::int64},     {"i64", DataType::int64}, {"s64", DataType::int64},
      {"uint64", DataType::uint64},   {"u64", DataType::uint64},
  };
  for (const auto& a : aliases)
    if (a.name == name) return a.type;
  return std::nullopt;
}

}  // namespace hk
