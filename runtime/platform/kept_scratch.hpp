// Device memory that one kind of kernel keeps on one device from call to call, holding what its
// last call left there: kernels whose state is valid by construction (zeroed once, then left
// valid by the kernel itself) need no launch to set it up. Offload builds only.
#pragma once

#include <cstddef>
#include <mutex>

namespace hk::detail {

/// One kind of kernel's block on one device. Use `data` only while holding `mutex`;
/// hk::release_cached_device_memory frees it (data null, bytes 0) once no call holds it.
struct KeptScratch {
  std::mutex mutex;
  void* data = nullptr;
  std::size_t bytes = 0;
  unsigned long long calls = 0;  // the owner's count of calls, kept when data is freed
};

/// The KeptScratch of `owner` (a kind of kernel) on `device`, the same object at every call.
KeptScratch& kept_scratch(int device, const char* owner);

/// Holding scratch.mutex: makes scratch.data hold at least `bytes`. A smaller block is freed and
/// replaced by one of the next power of two bytes, zeroed. Throws hk::Error as device_alloc.
void reserve_kept(KeptScratch& scratch, int device, std::size_t bytes);

/// Holding scratch.mutex: frees scratch.data when it holds more than `keep` bytes.
void trim_kept(KeptScratch& scratch, int device, std::size_t keep);

/// Frees every kept block, waiting for the calls that hold one, and returns their bytes (for
/// hk::release_cached_device_memory).
std::size_t release_kept_scratches();

}  // namespace hk::detail
