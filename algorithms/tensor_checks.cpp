// Tensor validation shared by all operators.
#include "algorithms/tensor_checks.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>

#include "hetkern/error.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t int64_max = INT64_MAX;

std::string dims_text(std::span<const std::int64_t> v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
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
  std::array<int, max_rank> order{};
  int n = 0;
  for (int d = 0; d < desc.rank(); ++d)
    if (desc.size(d) > 1) order[n++] = d;
  std::sort(order.begin(), order.begin() + n,
            [&](int x, int y) { return desc.stride(x) < desc.stride(y); });
  std::int64_t reach = 0;  // largest offset reachable with the dimensions seen so far
  for (int i = 0; i < n; ++i) {
    const int d = order[i];
    if (desc.stride(d) <= reach)
      throw Error(Errc::invalid_stride, std::string(op), std::string(name),
                  "strides " + dims_text(desc.strides()) + " with sizes " +
                      dims_text(desc.sizes()) + " can make elements overlap: each stride must "
                      "step over everything the smaller strides reach (dimension " +
                      std::to_string(d) + ")");
    reach += (desc.size(d) - 1) * desc.stride(d);
  }
}

ByteSpan byte_span(const TensorDesc& desc) {
  std::int64_t max_offset = 0;
  for (int d = 0; d < desc.rank(); ++d) max_offset += (desc.size(d) - 1) * desc.stride(d);
  const auto elem = std::int64_t(size_of(desc.dtype()));
  return {0, (max_offset + 1) * elem};
}

bool spans_overlap(const TensorDesc& a, const void* pa, const TensorDesc& b, const void* pb) {
  const auto sa = byte_span(a), sb = byte_span(b);
  const auto a0 = reinterpret_cast<std::uintptr_t>(pa), b0 = reinterpret_cast<std::uintptr_t>(pb);
  if (!(a0 < b0 + std::uintptr_t(sb.hi) && b0 < a0 + std::uintptr_t(sa.hi))) return false;
  // Interleaved tensors (x[::2] and x[1::2]): every distance from an element of a to one of b is
  // the distance of their bases plus a multiple of g, the strides' greatest common divisor in
  // bytes, so where none of those distances falls within an element, no byte is shared.
  std::int64_t g = 0;
  for (const TensorDesc* t : {&a, &b})
    for (int d = 0; d < t->rank(); ++d)
      if (t->size(d) > 1) g = std::gcd(g, t->stride(d) * std::int64_t(size_of(t->dtype())));
  if (g == 0) return true;
  const std::int64_t distance = std::int64_t(b0) - std::int64_t(a0);
  const std::int64_t r = (distance % g + g) % g;  // b's elements start r + k g bytes after a's
  return r < std::int64_t(size_of(a.dtype())) || g - r < std::int64_t(size_of(b.dtype()));
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
