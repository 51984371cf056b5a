// Device memory and device-resident tensors for the OpenMP target offload schedules. Builds with
// HETKERN_OFFLOAD (the default) only; see docs/gpu.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "hetkern/operators.hpp"
#include "hetkern/tensor.hpp"

namespace hk {

/// Everything in this header lives in a plugin, libhetkern_gpu.so next to libhetkern (or the file
/// HETKERN_GPU_PLUGIN names), which hetkern opens on the first call that needs it: a program that
/// never uses a device never loads the offload runtime. Without the plugin (missing, or the offload
/// runtime it needs cannot be loaded) the calls below throw hk::Error(Errc::unavailable) with the
/// reason, offload_on_host() is true and warm_up_offload() does nothing.
struct GpuPluginStatus {
  std::string path;     // the plugin's file
  bool loaded = false;  // opened in this process
  std::string error;    // why it cannot be opened (empty: no failure known)
};
/// Where the plugin stands, without opening it: a missing file is reported all the same, and so,
/// on a machine with NVIDIA's driver, is a plugin that would be refused because its GPU kernels
/// could not be built (no CUDA ptxas, nor a kept build in the GPU kernel cache).
GpuPluginStatus gpu_plugin_status();
/// Opens the plugin unless that was tried already, then gpu_plugin_status().
GpuPluginStatus load_gpu_plugin();

/// The OpenMP device the offload schedules run on: the default device when one is present and
/// offload is not disabled (OMP_TARGET_OFFLOAD=DISABLED), otherwise the host itself (fallback:
/// device memory is host memory and target regions run on host threads). Its first call makes
/// host threads spin, rather than sleep, while they wait for an NVIDIA GPU (the CUDA primary
/// context's scheduling flags, which LLVM's offload runtime sets to blocking): each synchronous
/// offload call returns tens of microseconds sooner, for a host core busy while it waits.
/// HETKERN_GPU_WAIT=block keeps the sleeping wait (another value is reported and ignored).
int offload_device();
/// True when offload_device() is the host.
bool offload_on_host();
/// The offload devices the split strategies (scan.split, qmm.split) can spread one call over:
/// the visible GPUs, OpenMP devices 0 to n - 1; 1 on the host fallback, whose one device is the
/// host itself.
int offload_device_count();
/// Bytes of team memory (CUDA dynamic shared memory) a GPU kernel may have on offload_device():
/// the GPU's opt-in limit where hetkern's launch shim is the offload runtime's CUDA driver, else
/// 48 KB, with which kernels that want more run fewer pipeline stages (docs/gpu.md); 0 on the
/// host fallback.
int gpu_team_memory_bytes();

/// Starts the offload runtime on offload_device() now: its first target region compiles every
/// kernel of the library for the GPU found (tens of seconds), which would otherwise land on the
/// first offload call. Timing code (benchmarks, the tuner) calls it before its clock starts.
/// Nothing to do on the host fallback; later calls return at once.
void warm_up_offload();

/// Copies between host and device memory, and between devices, that hetkern made since the last
/// reset (all threads).
struct TransferCounters {
  std::int64_t to_device_bytes = 0;
  std::int64_t to_host_bytes = 0;
  std::int64_t to_device_copies = 0;
  std::int64_t to_host_copies = 0;
  std::int64_t between_devices_bytes = 0;  // one GPU to another (calls spread over several)
  std::int64_t between_devices_copies = 0;
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
  /// Memory on offload_device() that hetkern does not own, such as a PyTorch CUDA tensor's
  /// (DLPack): `bytes` at `data`. The caller keeps it alive while the buffer is in use; the
  /// destructor leaves it alone.
  static DeviceBuffer borrow(void* data, std::size_t bytes);
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
  bool owned_ = true;
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
/// of the scan.offload_* strategies; anything else is hk::Error(Errc::invalid_schedule). Empty:
/// chosen like a host call's (hetkern/tuning.hpp) among the offload strategies only. Validation as for host tensors, plus: a
/// buffer is given (Errc::invalid_parameter) and holds every element (Errc::invalid_shape).
void cumulative_sum(DeviceConstTensor input, DeviceTensor output, const CumulativeOptions& options,
                    const Schedule& schedule = {});
void cumulative_product(DeviceConstTensor input, DeviceTensor output,
                        const CumulativeOptions& options, const Schedule& schedule = {});

namespace detail {
class DeviceB;
}

/// B of quantized_linear_matmul on device tensors packed once for every later call (weights
/// usually are constant): one K x N matrix, kept on offload_device() in the form the GPU kernels
/// read (int8 columns, where K is a multiple of 128; else B's own bytes), and copied once to each
/// other GPU that qmm.devices runs a part on, so that later calls move no B between GPUs.
/// Immutable after pack_b; copies share the packed data; safe to use from several threads at
/// once. Its device memory goes back to hetkern's scratch cache when the last copy is destroyed;
/// destroy it before the program ends, like a DeviceBuffer.
class DevicePackedB {
 public:
  DevicePackedB() = default;
  bool empty() const noexcept { return !kept_; }
  /// B's type and sizes as packed ({K,N}, packed strides).
  const TensorDesc& desc() const noexcept { return desc_; }
  /// Bytes it occupies on each device that holds it.
  std::int64_t packed_bytes() const noexcept;

 private:
  friend DevicePackedB pack_b(DeviceConstTensor b);
  friend const detail::DeviceB* device_b(const DevicePackedB& b) noexcept;
  TensorDesc desc_;
  std::shared_ptr<const detail::DeviceB> kept_;
};

/// Packs B ({K,N}, int8 or uint8, any non-negative strides, in device memory on offload_device()).
/// Validates B like quantized_linear_matmul does and throws hk::Error the same way; a batch of
/// matrices is Errc::invalid_shape (pack one matrix; A's batch dimensions broadcast against it).
DevicePackedB pack_b(DeviceConstTensor b);

/// The kept B of a DevicePackedB (null when empty).
const detail::DeviceB* device_b(const DevicePackedB& b) noexcept;

/// Device operands may name a DevicePackedB.
template <> struct PackedBFor<DeviceConstTensor> {
  using type = const DevicePackedB*;
};

/// Arguments of quantized_linear_matmul with A, B and the output in device memory (rules as for
/// QuantizedMatMulArgs, the same template). `packed_b`, when set, is B: `b` is ignored (leave it
/// empty); the packed B must outlive the call and lie on the device the call runs on. The quantization parameters
/// stay host tensors: they are validated on the host as for host calls, and copied to the device
/// with each call (counted transfers, a few bytes per row or column).
using DeviceQuantizedMatMulArgs = BasicQuantizedMatMulArgs<DeviceConstTensor>;

/// QuantizedLinearMatMul on device-resident A, B and output. The schedule must be qmm.offload or
/// qmm.offload_mma; anything else is hk::Error(Errc::invalid_schedule). Empty: chosen like a host
/// call's (hetkern/tuning.hpp) among the offload strategies only; the heuristic takes
/// qmm.offload_mma with its defaults. Validation as for host tensors, plus: buffers are given
/// (Errc::invalid_parameter) and hold every element (Errc::invalid_shape).
void quantized_linear_matmul(const DeviceQuantizedMatMulArgs& args, DeviceTensor output,
                             const Schedule& schedule = {});

/// Offload calls on host tensors copy them into device scratch blocks that hetkern keeps after
/// the call for the next one (up to 16 blocks and 2 GiB), and the kernels' workspaces come from
/// the same cache, the chained scan keeps its tile states in one block per device, and large
/// copies keep their page-locked host staging buffers. This frees the cached blocks, the kept ones
/// and the idle staging buffers now and returns their bytes; blocks in use by running calls are
/// unaffected, except that a kept block is freed as soon as its call ends (this waits for it).
/// The 4 KiB per device in which Hopper matmul calls keep their last tensor maps stay.
std::size_t release_cached_device_memory();

/// The copy canary: `bytes` from device address src to dst, both on offload_device(), by an
/// OpenMP target kernel with `teams` x `threads` (an SPMD kernel of 16-byte elements, several
/// loads in flight per thread, when both addresses and the size allow). Every offload schedule
/// is judged against it.
void device_copy(const void* src, void* dst, std::size_t bytes, int teams, int threads);

}  // namespace hk
