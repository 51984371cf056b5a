// Tensor validation shared by all operators.
#include "algorithms/tensor_checks.hpp"

#include <array>
#include <cstdint>
#include <string>

#include "algorithms/byte_layout.hpp"
#include "hetkern/error.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t int64_max = INT64_MAX;

std::string dims_text(std::span<const std::int64_t> v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

// The layout in bytes of a validated tensor at `data`.
ByteLayout byte_layout(const TensorDesc& desc, const void* data, std::array<std::int64_t, max_rank>& byte_strides) {
  const auto elem = std::int64_t(size_of(desc.dtype()));
  for (int d = 0; d < desc.rank(); ++d) byte_strides[std::size_t(d)] = desc.stride(d) * elem;
  return {std::int64_t(reinterpret_cast<std::uintptr_t>(data)), desc.sizes().data(), byte_strides.data(), desc.rank(),
          elem};
}

}  // namespace

void check_tensor(std::string_view op, std::string_view name, const TensorDesc& desc,
                  const void* data, int min_rank, int max_rank_allowed) {
  const int rank = desc.rank();
  if (rank < min_rank || rank > max_rank_allowed)
    throw Error(Errc::invalid_shape, std::string(op), std::string(name),
                "rank " + std::to_string(rank) + " is outside the allowed " +
                    std::to_string(min_rank) + " to " + std::to_string(max_rank_allowed));
  for (int d = 0; d < rank; ++d)
    if (desc.size(d) < 1)
      throw Error(Errc::invalid_shape, std::string(op), std::string(name),
                  "size " + std::to_string(desc.size(d)) + " of dimension " + std::to_string(d) +
                      " is not positive (sizes " + dims_text(desc.sizes()) + ")");
  std::int64_t count = 1;
  std::int64_t max_offset = 0;
  for (int d = 0; d < rank; ++d) {
    const std::int64_t n = desc.size(d), s = desc.stride(d);
    if (s < 0)
      throw Error(Errc::invalid_stride, std::string(op), std::string(name),
                  "stride " + std::to_string(s) + " of dimension " + std::to_string(d) +
                      " is negative");
    if (count > int64_max / n)
      throw Error(Errc::invalid_shape, std::string(op), std::string(name),
                  "element count of sizes " + dims_text(desc.sizes()) + " exceeds 64 bits");
    count *= n;
    if (s != 0 && (n - 1) > (int64_max - max_offset) / s)
      throw Error(Errc::invalid_stride, std::string(op), std::string(name), "element offsets exceed 64 bits");
    max_offset += (n - 1) * s;
  }
  const auto elem = std::int64_t(size_of(desc.dtype()));
  if (max_offset > int64_max / elem - 1)
    throw Error(Errc::invalid_stride, std::string(op), std::string(name), "byte offsets exceed 64 bits");
  if (data == nullptr) throw Error(Errc::invalid_parameter, std::string(op), std::string(name), "data pointer is null");
  // The last byte must be addressable from the data pointer: a span that wraps around the address
  // space cannot describe a buffer, and the overlap tests below add spans to addresses.
  const auto bytes = std::uint64_t(max_offset + 1) * std::uint64_t(elem);
  if (reinterpret_cast<std::uintptr_t>(data) > UINTPTR_MAX - bytes)
    throw Error(Errc::invalid_stride, std::string(op), std::string(name),
                "the " + std::to_string(bytes) + " bytes its strides span from the data pointer "
                "run past the end of the address space");
}

void check_output(std::string_view op, std::string_view name, const TensorDesc& desc,
                  const void* data, int min_rank, int max_rank_allowed) {
  check_tensor(op, name, desc, data, min_rank, max_rank_allowed);
  std::array<std::int64_t, max_rank> byte_strides{};
  const int d = overlapping_dimension(byte_layout(desc, data, byte_strides));
  if (d >= 0)
    throw Error(Errc::invalid_stride, std::string(op), std::string(name),
                "strides " + dims_text(desc.strides()) + " with sizes " + dims_text(desc.sizes()) +
                    " can make elements overlap: each stride must step over everything the smaller "
                    "strides reach (dimension " + std::to_string(d) + ")");
}

ByteSpan byte_span(const TensorDesc& desc) {
  std::int64_t max_offset = 0;
  for (int d = 0; d < desc.rank(); ++d) max_offset += (desc.size(d) - 1) * desc.stride(d);
  const auto elem = std::int64_t(size_of(desc.dtype()));
  return {0, (max_offset + 1) * elem};
}

bool spans_overlap(const TensorDesc& a, const void* pa, const TensorDesc& b, const void* pb) {
  std::array<std::int64_t, max_rank> a_strides{}, b_strides{};
  return may_share_bytes(byte_layout(a, pa, a_strides), byte_layout(b, pb, b_strides));
}

bool is_exact_alias(const TensorDesc& a, const void* pa, const TensorDesc& b, const void* pb) {
  if (pa != pb || a.dtype() != b.dtype() || a.rank() != b.rank()) return false;
  for (int d = 0; d < a.rank(); ++d) {
    if (a.size(d) != b.size(d)) return false;
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  }
  return true;
}

}  // namespace hk::detail
