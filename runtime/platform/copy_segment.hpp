// One range of a copy between host and device memory that moves several ranges in one go.
#pragma once

#include <cstddef>

namespace hk::detail {

/// `bytes` between host memory at `host` and device memory at `device` + `device_offset`.
struct CopySegment {
  void* host = nullptr;
  void* device = nullptr;
  std::size_t device_offset = 0;
  std::size_t bytes = 0;
};

/// Bytes from `base` to `at`, both within one tensor's span: where a part of the tensor lies in a
/// device copy of the whole span.
inline std::size_t byte_offset(const void* at, const void* base) {
  return std::size_t(static_cast<const char*>(at) - static_cast<const char*>(base));
}

}  // namespace hk::detail
