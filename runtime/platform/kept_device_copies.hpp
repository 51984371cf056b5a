// Small blocks kept in device memory from call to call (a kernel's tensor maps, its quantization
// parameters, the matmul product's argument block): a call whose block a kept copy already holds,
// as repeated calls on the same buffers with the same parameters have, launches with that copy and
// copies nothing to the device first.
// Offload builds only.
#pragma once

#include <cstddef>
#include <mutex>

namespace hk::detail {

/// A call's hold on the kept copies of one kind of block on one device, from keep() until this
/// object ends (after the launches that read them): one call at a time, the others copy their own.
class KeptDeviceCopy {
 public:
  /// The most bytes of a kept block.
  static constexpr std::size_t max_bytes = 512;
  /// Where no kept copy matches: make one now (`always`), or only where one of the kind's last
  /// 16 such blocks had the same bytes (`when_repeated`, for blocks whose launch can copy them
  /// itself, sooner than a copy of their own: a block seen once then costs no extra copy).
  enum class Fill { always, when_repeated };
  /// A device address on `device` holding `bytes` equal to `block` (host memory), among the kept
  /// copies of blocks of kind `owner` (a name, one set of copies each): a kept copy where one
  /// matches, else one made now as `fill` says (a counted copy, hk::transfer_counters) in place
  /// of the least recently used. Null where `bytes` is 0 or above max_bytes, `fill` makes none,
  /// another call holds this kind's copies on the device, or their memory or the copy cannot be
  /// had.
  const void* keep(int device, const char* owner, const void* block, std::size_t bytes, Fill fill = Fill::always);

 private:
  std::unique_lock<std::mutex> hold_;
};

}  // namespace hk::detail
