// Checks every operator applies to its tensors before anything runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hetkern/tensor.hpp"

namespace hk::detail {

/// Byte span [lo, hi) that a validated tensor's elements occupy, relative to its data pointer.
struct ByteSpan {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};

/// Rank within [min_rank, max_rank], sizes >= 1, strides >= 0, a data pointer, element and
/// byte offsets that fit in 64 bits, and a byte span that does not wrap around the address space
/// from the data pointer. Throws hk::Error naming op and name.
void check_tensor(std::string_view op, std::string_view name, const TensorDesc& desc,
                  const void* data, int min_rank = 1, int max_rank_allowed = max_rank);

/// check_tensor plus: no two elements share an address (a conservative test: sorted by stride,
/// each stride must step over everything the smaller strides reach).
void check_output(std::string_view op, std::string_view name, const TensorDesc& desc,
                  const void* data, int min_rank = 1, int max_rank_allowed = max_rank);

ByteSpan byte_span(const TensorDesc& desc);

/// True when two validated tensors may share a byte: their byte spans intersect, and their
/// elements do not interleave without touching (x[::2] and x[1::2] share none).
bool spans_overlap(const TensorDesc& a, const void* pa, const TensorDesc& b, const void* pb);

/// Same type, sizes, effective strides (ignoring size-1 dimensions) and base address.
bool is_exact_alias(const TensorDesc& a, const void* pa, const TensorDesc& b, const void* pb);

}  // namespace hk::detail
