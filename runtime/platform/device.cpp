// OpenMP devices: start-up registration of the NVPTX backend, the device buffer type and the
// copy canary.
#include "hetkern/device.hpp"

#include <dlfcn.h>
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <strings.h>
#include <utility>

#include "hetkern/error.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/environment.hpp"
#include "runtime/platform/launch_shape.hpp"
#include "runtime/platform/nvptx_backend.hpp"

// Names hetkern's device image in the PTX the offload runtime compiles from it: the GPU kernel
// cache keeps the PTX that defines it and no other image's (runtime/platform/ptxas_cache.sh).
#pragma omp declare target
extern "C" int hetkern_gpu_image_marker;
int hetkern_gpu_image_marker = 1;
#pragma omp end declare target

namespace hk {
namespace {

// Before the first target region: the runtime JIT-compiles the kernels with LLVM's NVPTX backend.
[[maybe_unused]] const bool nvptx_registered = (detail::register_nvptx_backend(), true);

// The CUDA driver's scheduling flags of a context (cuda.h): how a host thread waits for the GPU.
constexpr unsigned cu_ctx_sched_spin = 0x1, cu_ctx_sched_blocking_sync = 0x4, cu_ctx_sched_mask = 0x7;

// LLVM's CUDA plugin creates each device's primary context with CU_CTX_SCHED_BLOCKING_SYNC, unless
// it is already active: the host thread then sleeps until the GPU interrupts it, which every
// synchronous target region pays. Spin instead, as the CUDA runtime does by default on a host with
// more cores than contexts (PyTorch, the peer, waits that way): a primary context active with the
// plugin's flags gets spinning ones, an inactive one is activated with them (the plugin keeps the
// flags of an active context); one that another user of the driver activated with other flags
// keeps them. Without the driver loaded by the offload runtime there is nothing to do.
void wait_for_gpus_by_spinning() {
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!cuda) return;
  auto device_count = reinterpret_cast<int (*)(int*)>(dlsym(cuda, "cuDeviceGetCount"));
  auto device_get = reinterpret_cast<int (*)(int*, int)>(dlsym(cuda, "cuDeviceGet"));
  auto get_state = reinterpret_cast<int (*)(int, unsigned*, int*)>(dlsym(cuda, "cuDevicePrimaryCtxGetState"));
  auto set_flags = reinterpret_cast<int (*)(int, unsigned)>(dlsym(cuda, "cuDevicePrimaryCtxSetFlags_v2"));
  auto retain = reinterpret_cast<int (*)(void**, int)>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
  int count = 0;
  if (device_count && device_get && get_state && set_flags && retain && device_count(&count) == 0) {
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      int device = 0, active = 0;
      unsigned flags = 0;
      if (device_get(&device, ordinal) != 0 || get_state(device, &flags, &active) != 0) continue;
      if (active && (flags & cu_ctx_sched_mask) != cu_ctx_sched_blocking_sync) continue;
      if (set_flags(device, (flags & ~cu_ctx_sched_mask) | cu_ctx_sched_spin) != 0 || active) continue;
      void* context = nullptr;
      retain(&context, device);  // held for the process, as the plugin holds it
    }
  }
  dlclose(cuda);
}

// OMP_TARGET_OFFLOAD=DISABLED: LLVM's runtime then runs every target region on the host, yet
// still counts its devices and allocates on them, so its device count alone would send calls to
// memory that the host-run kernels cannot read.
bool offload_disabled() {
  const char* setting = std::getenv("OMP_TARGET_OFFLOAD");
  return setting && strcasecmp(setting, "disabled") == 0;
}

}  // namespace

int offload_device() {
  static const bool disabled = offload_disabled();
  const int devices = disabled ? 0 : omp_get_num_devices();
  [[maybe_unused]] static const bool spinning = detail::gpu_waits_spin() && (wait_for_gpus_by_spinning(), true);
  return devices > 0 ? omp_get_default_device() : omp_get_initial_device();
}

bool offload_on_host() { return offload_device() == omp_get_initial_device(); }

int offload_device_count() { return offload_on_host() ? 1 : omp_get_num_devices(); }

void warm_up_offload() {
  const int dev = offload_device();
#pragma omp target device(dev)
  {
  }
}

DeviceBuffer::DeviceBuffer(std::size_t bytes)
    : data_(detail::device_alloc(bytes, offload_device(), "buffer")), bytes_(bytes),
      device_(offload_device()) {}

DeviceBuffer DeviceBuffer::borrow(void* data, std::size_t bytes) {
  DeviceBuffer buffer;
  buffer.data_ = data;
  buffer.bytes_ = bytes;
  buffer.device_ = offload_device();
  buffer.owned_ = false;
  return buffer;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ && owned_) omp_target_free(data_, device_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)),
      device_(other.device_), owned_(other.owned_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ && owned_) omp_target_free(data_, device_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = other.device_;
    owned_ = other.owned_;
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw Error(Errc::invalid_parameter, "device", "upload",
                std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                    " exceed the buffer's " + std::to_string(bytes_));
  detail::copy_to_device(data_, offset, host, bytes, device_);
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw Error(Errc::invalid_parameter, "device", "download",
                std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                    " exceed the buffer's " + std::to_string(bytes_));
  detail::copy_to_host(host, data_, offset, bytes, device_);
}

// Loads a thread of the 16-byte copy issues before it stores any.
constexpr int copy_loads_in_flight = 4;

void device_copy(const void* src, void* dst, std::size_t bytes, int teams_asked, int threads_asked) {
  if (teams_asked < 1 || threads_asked < 1)
    throw Error(Errc::invalid_parameter, "device_copy", teams_asked < 1 ? "teams" : "threads",
                "must be at least 1");
  const int dev = offload_device();
  const detail::LaunchShape shape = detail::launch_shape(dev, teams_asked, threads_asked);
  const int teams = shape.teams, threads = shape.threads;
  using Vec16 = unsigned __attribute__((ext_vector_type(4)));
  if (reinterpret_cast<std::uintptr_t>(src) % 16 == 0 &&
      reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 && bytes % 16 == 0) {
    const auto* s = static_cast<const Vec16*>(src);
    auto* d = static_cast<Vec16*>(dst);
    const std::int64_t n = std::int64_t(bytes / 16);
    // SPMD kernel: each team copies one contiguous range, its threads side by side (coalesced),
    // each thread several loads in flight before it stores, the last partial batch too (a range of
    // one or two loads per thread still issues them all at once); counts as the region got them.
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) is_device_ptr(s, d)
#pragma omp parallel
    {
      const std::int64_t team_count = omp_get_num_teams(), team = omp_get_team_num();
      const std::int64_t first = n * team / team_count, last = n * (team + 1) / team_count;
      const std::int64_t step = omp_get_num_threads();
      for (std::int64_t i = first + omp_get_thread_num(); i < last; i += copy_loads_in_flight * step) {
        Vec16 v[copy_loads_in_flight];
        for (int k = 0; k < copy_loads_in_flight; ++k)
          if (i + k * step < last) v[k] = s[i + k * step];
        for (int k = 0; k < copy_loads_in_flight; ++k)
          if (i + k * step < last) d[i + k * step] = v[k];
      }
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

}  // namespace hk
