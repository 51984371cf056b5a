// Device memory and device-resident tensors for the OpenMP target offload schedules. Offload
// builds only (CMake preset `offload`, HETKERN_OFFLOAD defined); see README "GPU offload".
#pragma once

#include <cstddef>
#include <cstdint>

#include "hetkern/operators.hpp"
#include "hetkern/tensor.hpp"

namespace hk {

/// The OpenMP device the offload schedules run on: the default device when one is present and
/// offload is not disabled (OMP_TARGET_OFFLOAD=DISABLED), otherwise the host itself (fallback:
/// device memory is host memory and target regions run on host threads).
int offload_device();
/// True when offload_device() is the host.
bool offload_on_host();

/// Copies between host and device memory that hetkern made, since the last reset (all threads).
struct TransferCounters {
  std::int64_t to_device_bytes = 0;
  std::int64_t to_host_bytes = 0;
  std::int64_t to_device_copies = 0;
  std::int64_t to_host_copies = 0;
};
TransferCounters transfer_counters();
void reset_transfer_counters();

/// Memory on offload_device() (omp_target_alloc), owned; movable, not copyable. upload() and
/// download() are the explicit, counted transfers.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Throws hk::Error(Errc::invalid_parameter) when the device cannot allocate `bytes`.
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  int device() const noexcept { return device_; }

  /// Host -> device: `bytes` from `host` to offset `offset` of the buffer. Throws
  /// hk::Error(Errc::invalid_parameter) when the range exceeds the buffer.
  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  /// Device -> host: `bytes` from offset `offset` of the buffer to `host`.
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = 0;
};

/// A read-only tensor in a DeviceBuffer: descriptor, buffer, and the byte offset of element
/// {0,...,0} in it. Operators check that every element lies inside the buffer.
struct DeviceConstTensor {
  TensorDesc desc;
  const DeviceBuffer* buffer = nullptr;
  std::size_t offset = 0;
};

/// A writable tensor in a DeviceBuffer.
struct DeviceTensor {
  TensorDesc desc;
  DeviceBuffer* buffer = nullptr;
  std::size_t offset = 0;

  operator DeviceConstTensor() const noexcept { return {desc, buffer, offset}; }
};

/// The cumulative operators on device-resident tensors: no transfers. The schedule must be one
/// of the scan.offload_* strategies (empty: the default offload schedule for the shape);
/// anything else is hk::Error(Errc::invalid_schedule). Validation as for host tensors, plus: a
/// buffer is given (Errc::invalid_parameter) and holds every element (Errc::invalid_shape).
void cumulative_sum(DeviceConstTensor input, DeviceTensor output, const CumulativeOptions& options,
                    const Schedule& schedule = {});
void cumulative_product(DeviceConstTensor input, DeviceTensor output,
                        const CumulativeOptions& options, const Schedule& schedule = {});

/// The copy canary: `bytes` from device address src to dst, both on offload_device(), by an
/// OpenMP target kernel with `teams` x `threads` (an SPMD kernel of 16-byte elements, several
/// loads in flight per thread, when both addresses and the size allow). Every offload schedule
/// is judged against it.
void device_copy(const void* src, void* dst, std::size_t bytes, int teams, int threads);

}  // namespace hk
