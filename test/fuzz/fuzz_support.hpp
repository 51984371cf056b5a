// Shared by the fuzz targets: descriptors drawn from the fuzzer's bytes, their byte spans computed
// independently of the library (128-bit arithmetic), and buffers sized exactly from them so that
// AddressSanitizer reports any access outside what a descriptor describes.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "hetkern/hetkern.hpp"

namespace hk::fuzz {

/// A finding: the property named by `what` does not hold.
[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz property violated: %s\n", what);
  std::abort();
}

inline void require(bool ok, const char* what) {
  if (!ok) fail(what);
}

inline constexpr DataType all_types[] = {DataType::float16, DataType::float32, DataType::float64,
                                         DataType::bfloat16, DataType::int8,   DataType::uint8,
                                         DataType::int32,   DataType::uint32,  DataType::int64,
                                         DataType::uint64};

/// Spans up to this many bytes get a real buffer and a real call; larger ones are only validated.
inline constexpr std::int64_t max_buffer_bytes = 1 << 16;

/// Mostly small sizes, sometimes the edges of what a descriptor can hold.
inline std::int64_t draw_size(FuzzedDataProvider& in) {
  static constexpr std::int64_t extremes[] = {0, -1, INT64_MIN, INT64_MAX, std::int64_t(1) << 31,
                                              std::int64_t(1) << 47, std::int64_t(1) << 62};
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: return in.PickValueInArray(extremes);
    case 1: return in.ConsumeIntegral<std::int64_t>();
    default: return in.ConsumeIntegralInRange<std::int64_t>(1, 6);
  }
}

/// Packed strides, or small ones (0 broadcasts), or extreme ones.
inline std::vector<std::int64_t> draw_strides(FuzzedDataProvider& in, std::size_t rank) {
  std::vector<std::int64_t> strides;
  const int kind = in.ConsumeIntegralInRange<int>(0, 3);
  if (kind == 0) return strides;  // packed
  for (std::size_t d = 0; d < rank; ++d)
    strides.push_back(kind == 3 ? draw_size(in) : in.ConsumeIntegralInRange<std::int64_t>(0, 40));
  return strides;
}

inline std::vector<std::int64_t> draw_sizes(FuzzedDataProvider& in, int min_rank, int max_rank) {
  std::vector<std::int64_t> sizes(in.ConsumeIntegralInRange<std::size_t>(std::size_t(min_rank), std::size_t(max_rank)));
  for (auto& s : sizes) s = draw_size(in);
  return sizes;
}

/// A descriptor, or nothing when TensorDesc itself refused it (it must refuse with hk::Error).
inline std::optional<TensorDesc> make_desc(DataType type, const std::vector<std::int64_t>& sizes,
                                           const std::vector<std::int64_t>& strides) {
  try {
    return TensorDesc(type, sizes, strides);
  } catch (const Error&) {
    require(sizes.size() > std::size_t(max_rank) || (!strides.empty() && strides.size() != sizes.size()),
            "TensorDesc refused a rank and stride count it documents as valid");
    return std::nullopt;
  }
}

/// Bytes from element {0,...} to the end of the last element, or nothing when the descriptor is
/// invalid for every operator (a size below 1, a negative stride) or the span exceeds 2^63 - 1.
inline std::optional<std::int64_t> byte_span(const TensorDesc& d) {
  __int128 last = 0;
  for (int k = 0; k < d.rank(); ++k) {
    if (d.size(k) < 1 || d.stride(k) < 0) return std::nullopt;
    last += __int128(d.size(k) - 1) * d.stride(k);
    if (last > INT64_MAX) return std::nullopt;
  }
  const __int128 bytes = (last + 1) * __int128(size_of(d.dtype()));
  if (bytes > INT64_MAX) return std::nullopt;
  return std::int64_t(bytes);
}

/// Product of the sizes, saturated at 2^62 (sizes must be >= 1).
inline std::int64_t logical_count(const TensorDesc& d) {
  __int128 n = 1;
  for (int k = 0; k < d.rank(); ++k) n = std::min<__int128>(n * d.size(k), __int128(1) << 62);
  return std::int64_t(n);
}

/// A buffer of exactly `bytes` bytes (at least one, so the pointer is never null), filled from the
/// fuzzer's bytes and then with a fixed pattern.
inline std::vector<unsigned char> make_buffer(FuzzedDataProvider& in, std::int64_t bytes) {
  std::vector<unsigned char> b(std::size_t(std::max<std::int64_t>(bytes, 1)), 0x5A);
  const auto given = in.ConsumeBytes<unsigned char>(b.size());
  if (!given.empty()) std::memcpy(b.data(), given.data(), given.size());
  return b;
}

}  // namespace hk::fuzz
