// Device scratch memory reused across calls (the offload kernels' carries and tile states), so
// that a call does not pay for an allocation on the device.
#pragma once

#include <cstddef>

namespace hk::detail {

/// Scratch memory of at least `bytes` on OpenMP device `device` for the lifetime of the lease;
/// leases held at the same time get distinct memory. Throws hk::Error(Errc::invalid_parameter)
/// when the device cannot allocate it.
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

}  // namespace hk::detail
