// OpenMP devices: start-up registration of the NVPTX backend, device memory with counted
// transfers, scratch reuse, the copy canary and the operators on device tensors.
#include "hetkern/device.hpp"

#include <dlfcn.h>
#include <omp.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "algorithms/cumulative.hpp"
#include "algorithms/tensor_checks.hpp"
#include "hetkern/error.hpp"
#include "runtime/device_memory.hpp"
#include "schedules/scan_offload.hpp"

namespace hk {
namespace {

// Debian's LLVM 19 offload runtime JIT-compiles the kernels' IR for the GPU it finds, but does
// not register the NVPTX backend first ("Unable to find target for this triple"). Register it
// from the libLLVM the runtime loaded, before the first target region. Absent symbols (no GPU
// plugin, another LLVM) leave nothing to do.
struct RegisterNvptxBackend {
  RegisterNvptxBackend() {
    for (const char* name : {"LLVMInitializeNVPTXTargetInfo", "LLVMInitializeNVPTXTarget",
                             "LLVMInitializeNVPTXTargetMC", "LLVMInitializeNVPTXAsmPrinter"})
      if (void* f = dlsym(RTLD_DEFAULT, name)) reinterpret_cast<void (*)()>(f)();
  }
};
const RegisterNvptxBackend register_nvptx_backend;

struct Counters {
  std::atomic<std::int64_t> to_device_bytes{0}, to_host_bytes{0}, to_device_copies{0}, to_host_copies{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

void* device_alloc(std::size_t bytes, int device, const char* what) {
  void* p = omp_target_alloc(bytes == 0 ? 1 : bytes, device);
  if (!p)
    throw Error(Errc::invalid_parameter, "device", what,
                "cannot allocate " + std::to_string(bytes) + " bytes on OpenMP device " +
                    std::to_string(device));
  return p;
}

// Freed scratch blocks of each device, kept for the next lease. Deliberately never destroyed:
// device memory goes with the process, and freeing it after the offload runtime shut down
// would fail.
struct ScratchPool {
  std::mutex mutex;
  struct Block {
    int device;
    void* data;
    std::size_t bytes;
  };
  std::vector<Block> free;
};
ScratchPool& scratch_pool() {
  static ScratchPool* pool = new ScratchPool;
  return *pool;
}

void check_offload_schedule(const detail::CumulativeCall& call, const Schedule& schedule,
                            detail::ScanPlan& plan) {
  plan = schedule.empty() ? detail::default_offload_scan_plan(call) : detail::plan_scan(call, schedule);
  if (!plan.offload())
    throw Error(Errc::invalid_schedule, call.op_name(), schedule.to_string(),
                "tensors in device memory need a scan.offload_* schedule");
}

// The address of a device tensor's element {0,...,0}, once its buffer is known to hold it all.
const void* device_address(const char* op, const char* name, const TensorDesc& desc,
                           const DeviceBuffer* buffer, std::size_t offset) {
  if (!buffer || !buffer->data())
    throw Error(Errc::invalid_parameter, op, name, "has no device buffer");
  // The descriptor's own checks (sizes, strides, 64-bit offsets) come first.
  detail::check_tensor(op, name, desc, buffer->data());
  const auto span = std::size_t(detail::byte_span(desc).hi);
  if (offset > buffer->bytes() || span > buffer->bytes() - offset)
    throw Error(Errc::invalid_shape, op, name,
                desc.to_string() + " at byte offset " + std::to_string(offset) + " needs " +
                    std::to_string(offset + span) + " bytes; the buffer holds " +
                    std::to_string(buffer->bytes()));
  return static_cast<const char*>(buffer->data()) + offset;
}

void run_on_device(bool product, DeviceConstTensor input, DeviceTensor output,
                   const CumulativeOptions& options, const Schedule& schedule) {
  const char* op = product ? "cumulative_product" : "cumulative_sum";
  const void* x = device_address(op, "input", input.desc, input.buffer, input.offset);
  void* y = const_cast<void*>(device_address(op, "output", output.desc, output.buffer, output.offset));
  const detail::CumulativeCall call{product, {input.desc, x}, {output.desc, y}, options};
  detail::validate(call);
  detail::ScanPlan plan;
  check_offload_schedule(call, schedule, plan);
  detail::run_scan_offload(call, plan, offload_device());
}

}  // namespace

int offload_device() {
  return omp_get_num_devices() > 0 ? omp_get_default_device() : omp_get_initial_device();
}

bool offload_on_host() { return offload_device() == omp_get_initial_device(); }

TransferCounters transfer_counters() {
  Counters& c = counters();
  return {c.to_device_bytes.load(), c.to_host_bytes.load(), c.to_device_copies.load(),
          c.to_host_copies.load()};
}

void reset_transfer_counters() {
  Counters& c = counters();
  c.to_device_bytes = 0;
  c.to_host_bytes = 0;
  c.to_device_copies = 0;
  c.to_host_copies = 0;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes)
    : data_(device_alloc(bytes, offload_device(), "buffer")), bytes_(bytes), device_(offload_device()) {}

DeviceBuffer::~DeviceBuffer() {
  if (data_) omp_target_free(data_, device_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)),
      device_(other.device_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) omp_target_free(data_, device_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = other.device_;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw Error(Errc::invalid_parameter, "device", "upload",
                std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                    " exceed the buffer's " + std::to_string(bytes_));
  if (bytes == 0) return;
  if (omp_target_memcpy(data_, host, bytes, offset, 0, device_, omp_get_initial_device()) != 0)
    throw Error(Errc::invalid_parameter, "device", "upload", "the copy to the device failed");
  counters().to_device_bytes += std::int64_t(bytes);
  ++counters().to_device_copies;
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw Error(Errc::invalid_parameter, "device", "download",
                std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                    " exceed the buffer's " + std::to_string(bytes_));
  if (bytes == 0) return;
  if (omp_target_memcpy(host, data_, bytes, 0, offset, omp_get_initial_device(), device_) != 0)
    throw Error(Errc::invalid_parameter, "device", "download", "the copy from the device failed");
  counters().to_host_bytes += std::int64_t(bytes);
  ++counters().to_host_copies;
}

void cumulative_sum(DeviceConstTensor input, DeviceTensor output, const CumulativeOptions& options,
                    const Schedule& schedule) {
  run_on_device(false, input, output, options, schedule);
}

void cumulative_product(DeviceConstTensor input, DeviceTensor output,
                        const CumulativeOptions& options, const Schedule& schedule) {
  run_on_device(true, input, output, options, schedule);
}

// Loads a thread of the 16-byte copy issues before it stores any.
constexpr int copy_loads_in_flight = 4;

void device_copy(const void* src, void* dst, std::size_t bytes, int teams, int threads) {
  if (teams < 1 || threads < 1)
    throw Error(Errc::invalid_parameter, "device_copy", teams < 1 ? "teams" : "threads",
                "must be at least 1");
  const int dev = offload_device();
  using Vec16 = unsigned __attribute__((ext_vector_type(4)));
  if (reinterpret_cast<std::uintptr_t>(src) % 16 == 0 &&
      reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 && bytes % 16 == 0) {
    const auto* s = static_cast<const Vec16*>(src);
    auto* d = static_cast<Vec16*>(dst);
    const std::int64_t n = std::int64_t(bytes / 16);
    // SPMD kernel: each team copies one contiguous range, its threads side by side (coalesced),
    // each thread several loads in flight before it stores; counts as the region got them.
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) is_device_ptr(s, d)
#pragma omp parallel
    {
      const std::int64_t team_count = omp_get_num_teams(), team = omp_get_team_num();
      const std::int64_t first = n * team / team_count, last = n * (team + 1) / team_count;
      const std::int64_t step = omp_get_num_threads();
      std::int64_t i = first + omp_get_thread_num();
      for (; i + (copy_loads_in_flight - 1) * step < last; i += copy_loads_in_flight * step) {
        Vec16 v[copy_loads_in_flight];
        for (int k = 0; k < copy_loads_in_flight; ++k) v[k] = s[i + k * step];
        for (int k = 0; k < copy_loads_in_flight; ++k) d[i + k * step] = v[k];
      }
      for (; i < last; i += step) d[i] = s[i];
    }
    return;
  }
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const std::int64_t n = std::int64_t(bytes);
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(threads) \
    device(dev) is_device_ptr(s, d)
  for (std::int64_t i = 0; i < n; ++i) d[i] = s[i];
}

namespace detail {

ScratchLease::ScratchLease(int device, std::size_t bytes) : device_(device), data_(nullptr), bytes_(0) {
  ScratchPool& pool = scratch_pool();
  {
    const std::lock_guard<std::mutex> lock(pool.mutex);
    for (std::size_t i = 0; i < pool.free.size(); ++i)
      if (pool.free[i].device == device && pool.free[i].bytes >= bytes) {
        data_ = pool.free[i].data;
        bytes_ = pool.free[i].bytes;
        pool.free.erase(pool.free.begin() + std::ptrdiff_t(i));
        return;
      }
  }
  data_ = device_alloc(bytes, device, "scratch");
  bytes_ = bytes;
}

ScratchLease::~ScratchLease() {
  ScratchPool& pool = scratch_pool();
  const std::lock_guard<std::mutex> lock(pool.mutex);
  // Keep one block per device, the largest: it serves every smaller request.
  for (auto& block : pool.free)
    if (block.device == device_) {
      if (block.bytes < bytes_) std::swap(block.data, data_), std::swap(block.bytes, bytes_);
      omp_target_free(data_, device_);
      return;
    }
  pool.free.push_back({device_, data_, bytes_});
}

}  // namespace detail
}  // namespace hk
