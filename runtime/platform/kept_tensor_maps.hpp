// Tensor maps kept in device memory from call to call (cuda_tensor_map.hpp): a call whose maps a
// kept copy already holds, as repeated calls on the same buffers have, launches with that copy
// and copies nothing to the device first. Offload builds only.
#pragma once

#include <cstddef>
#include <mutex>

namespace hk::detail {

/// A call's hold on one device's kept maps, from keep() until this object ends (after the launch
/// that reads them): one call at a time, the others copy their own.
class KeptTensorMaps {
 public:
  /// The most bytes of maps a call keeps.
  static constexpr std::size_t max_bytes = 256;
  /// A device address on `device` holding `bytes` equal to `maps` (host memory): a kept copy where
  /// one matches, else one made now in place of the device's least recently used. Null where
  /// another call holds the device's kept maps or their memory cannot be had.
  const void* keep(int device, const void* maps, std::size_t bytes);

 private:
  std::unique_lock<std::mutex> hold_;
};

}  // namespace hk::detail
