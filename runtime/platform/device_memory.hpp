// Device memory that hetkern manages for its own calls: scratch blocks reused across calls (the
// kernels' carries and workspaces, the device copies of host tensors) and the counted copies
// between host and device. Offload builds only.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "runtime/platform/copy_segment.hpp"

namespace hk::detail {

/// Memory of at least `bytes` on OpenMP device `device` for the lifetime of the lease; leases held
/// at the same time get distinct memory. Blocks come from a cache of freed blocks when one fits
/// (hk::release_cached_device_memory empties it). Throws hk::Error(Errc::invalid_parameter) when
/// the device cannot allocate it.
class ScratchLease {
 public:
  ScratchLease(int device, std::size_t bytes);
  ~ScratchLease();
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  void* data() const noexcept { return data_; }

 private:
  int device_;
  void* data_;
  std::size_t bytes_;
};

/// `bytes` from host memory to device memory on `device` (offsets in bytes), counted in
/// hk::transfer_counters(). A GPU reads page-locked host memory directly; large copies of pageable
/// memory go through the staging buffers (pinned_staging.hpp). Throws hk::Error(Errc::invalid_parameter) when the copy fails.
void copy_to_device(void* device_dst, std::size_t dst_offset, const void* host_src,
                    std::size_t bytes, int device);
/// `bytes` from device memory on `device` to host memory, counted, staged as above.
void copy_to_host(void* host_dst, const void* device_src, std::size_t src_offset,
                  std::size_t bytes, int device);

/// The segments from host memory to device memory on `device`, one after another, as one staged
/// copy where they are staged (so that the link stays busy from one to the next), counted as a
/// copy each; landed(i), when set, runs once segment i is all on the device (on any of the copy's
/// threads, inside a parallel region: it must not throw).
void copy_segments_to_device(const std::vector<CopySegment>& segments, int device,
                             const std::function<void(std::size_t)>& landed = {});
/// The segments from device memory on `device` to host memory, as above. No byte of segment i
/// moves before ready(i), when set, returned true; when it returns false, the copy stops there.
/// ready may run on several of the copy's threads at once and must not throw.
void copy_segments_to_host(const std::vector<CopySegment>& segments, int device,
                           const std::function<bool(std::size_t)>& ready = {});

/// `bytes` from device memory on `src_device` to device memory on `dst_device`, peer to peer
/// where the offload runtime can (else staged through the host), counted.
void copy_between_devices(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes);

/// omp_target_alloc on `device`, never null: throws hk::Error(Errc::invalid_parameter) naming
/// `what` when the device cannot allocate `bytes`.
void* device_alloc(std::size_t bytes, int device, const char* what);

}  // namespace hk::detail
