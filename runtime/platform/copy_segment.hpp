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

}  // namespace hk::detail
