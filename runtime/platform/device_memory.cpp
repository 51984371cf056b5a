// Scratch blocks cached across calls and the counted host <-> device copies (device_memory.hpp).
#include "runtime/platform/device_memory.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "hetkern/device.hpp"
#include "hetkern/error.hpp"
#include "runtime/platform/kept_scratch.hpp"
#include "runtime/platform/page_locked.hpp"
#include "runtime/platform/pinned_staging.hpp"

namespace hk {
namespace {

struct Counters {
  std::atomic<std::int64_t> to_device_bytes{0}, to_host_bytes{0}, to_device_copies{0}, to_host_copies{0},
      between_devices_bytes{0}, between_devices_copies{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

// Freed scratch blocks, least recently freed first. A call needs a handful at once on each device
// it uses (input, output, workspace, parameters, carries); the cache keeps that many per device
// and at most max_cached_bytes per device, so that repeated calls never wait for a device's
// allocator (whose frees also wait for everything running on the device), while a process that
// stops calling does not hold more than that. Deliberately never destroyed: device
// memory goes with the process, and freeing it after the offload runtime shut down would fail.
constexpr std::size_t max_cached_blocks = 16;
constexpr std::size_t max_cached_bytes = std::size_t(1) << 31;

struct ScratchPool {
  std::mutex mutex;
  struct Block {
    int device;
    void* data;
    std::size_t bytes;
  };
  std::vector<Block> free;
  std::size_t cached_bytes = 0;
};
ScratchPool& scratch_pool() {
  static ScratchPool* pool = new ScratchPool;
  return *pool;
}

}  // namespace

TransferCounters transfer_counters() {
  Counters& c = counters();
  return {c.to_device_bytes.load(),        c.to_host_bytes.load(),
          c.to_device_copies.load(),       c.to_host_copies.load(),
          c.between_devices_bytes.load(), c.between_devices_copies.load()};
}

void reset_transfer_counters() {
  Counters& c = counters();
  c.to_device_bytes = 0;
  c.to_host_bytes = 0;
  c.to_device_copies = 0;
  c.to_host_copies = 0;
  c.between_devices_bytes = 0;
  c.between_devices_copies = 0;
}

std::size_t release_cached_device_memory() {
  std::size_t released = 0;
  {
    ScratchPool& pool = scratch_pool();
    const std::lock_guard<std::mutex> lock(pool.mutex);
    released = pool.cached_bytes;
    for (const auto& block : pool.free) omp_target_free(block.data, block.device);
    pool.free.clear();
    pool.cached_bytes = 0;
  }
  // Outside the pool's lock: this waits for running calls that hold a kept block.
  return released + detail::release_kept_scratches() + detail::release_staging_buffers();
}

namespace detail {
namespace {

// Whether a copy of segments between host memory and `device` goes through the staging buffers: a
// large one to a GPU, unless its host memory is page-locked already and the GPU reads or writes it
// directly.
bool staged_copy(const std::vector<CopySegment>& segments, int device) {
  std::size_t bytes = 0;
  for (const CopySegment& g : segments) bytes += g.bytes;
  // Only then ask the driver: small copies (parameters, flags, counts) are many.
  if (bytes < staged_copy_min_bytes || device == omp_get_initial_device()) return false;
  return std::any_of(segments.begin(), segments.end(),
                     [](const CopySegment& g) { return g.bytes > 0 && !host_range_page_locked(g.host, g.bytes); });
}

// Counts a copy of `segments`: their bytes, and a copy per segment that holds any.
void count(const std::vector<CopySegment>& segments, std::atomic<std::int64_t>& bytes, std::atomic<std::int64_t>& copies) {
  for (const CopySegment& g : segments)
    if (g.bytes > 0) {
      bytes += std::int64_t(g.bytes);
      ++copies;
    }
}

}  // namespace

void* device_alloc(std::size_t bytes, int device, const char* what) {
  void* p = omp_target_alloc(bytes == 0 ? 1 : bytes, device);
  if (!p)
    throw Error(Errc::invalid_parameter, "device", what,
                "cannot allocate " + std::to_string(bytes) + " bytes on OpenMP device " +
                    std::to_string(device));
  return p;
}

void copy_to_device(void* device_dst, std::size_t dst_offset, const void* host_src,
                    std::size_t bytes, int device) {
  copy_segments_to_device({{const_cast<void*>(host_src), device_dst, dst_offset, bytes}}, device);
}

void copy_to_host(void* host_dst, const void* device_src, std::size_t src_offset,
                  std::size_t bytes, int device) {
  copy_segments_to_host({{host_dst, const_cast<void*>(device_src), src_offset, bytes}}, device);
}

void copy_segments_to_device(const std::vector<CopySegment>& segments, int device,
                             const std::function<void(std::size_t)>& landed) {
  if (!(staged_copy(segments, device) && staged_segments_to_device(segments, device, landed)))
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const CopySegment& g = segments[i];
      if (g.bytes > 0 &&
          omp_target_memcpy(g.device, g.host, g.bytes, g.device_offset, 0, device, omp_get_initial_device()) != 0)
        throw Error(Errc::invalid_parameter, "device", "upload", "the copy to the device failed");
      if (landed) landed(i);
    }
  count(segments, counters().to_device_bytes, counters().to_device_copies);
}

void copy_segments_to_host(const std::vector<CopySegment>& segments, int device,
                           const std::function<bool(std::size_t)>& ready) {
  std::atomic<bool> stopped{false};  // ready runs on the copy's link threads
  const std::function<bool(std::size_t)> go_on = [&](std::size_t i) {
    if (!ready || ready(i)) return true;
    stopped = true;
    return false;
  };
  if (!(staged_copy(segments, device) && staged_segments_to_host(segments, device, go_on)))
    for (std::size_t i = 0; i < segments.size() && go_on(i); ++i) {
      const CopySegment& g = segments[i];
      if (g.bytes > 0 &&
          omp_target_memcpy(g.host, g.device, g.bytes, 0, g.device_offset, omp_get_initial_device(), device) != 0)
        throw Error(Errc::invalid_parameter, "device", "download", "the copy from the device failed");
    }
  if (!stopped) count(segments, counters().to_host_bytes, counters().to_host_copies);
}

void copy_between_devices(void* dst, int dst_device, const void* src, int src_device, std::size_t bytes) {
  if (bytes == 0) return;
  // LLVM's runtime copies peer to peer where the two devices allow it, else through the host.
  if (omp_target_memcpy(dst, src, bytes, 0, 0, dst_device, src_device) != 0)
    throw Error(Errc::invalid_parameter, "device", "copy between devices",
                "the copy of " + std::to_string(bytes) + " bytes from OpenMP device " + std::to_string(src_device) +
                    " to device " + std::to_string(dst_device) + " failed");
  counters().between_devices_bytes += std::int64_t(bytes);
  ++counters().between_devices_copies;
}

ScratchLease::ScratchLease(int device, std::size_t bytes) : device_(device), data_(nullptr), bytes_(0) {
  ScratchPool& pool = scratch_pool();
  {
    const std::lock_guard<std::mutex> lock(pool.mutex);
    // The smallest cached block that fits, so that large blocks stay for large requests.
    auto best = pool.free.end();
    for (auto it = pool.free.begin(); it != pool.free.end(); ++it)
      if (it->device == device && it->bytes >= bytes && (best == pool.free.end() || it->bytes < best->bytes))
        best = it;
    if (best != pool.free.end()) {
      data_ = best->data;
      bytes_ = best->bytes;
      pool.cached_bytes -= best->bytes;
      pool.free.erase(best);
      return;
    }
  }
  data_ = device_alloc(bytes, device, "scratch");
  bytes_ = bytes;
}

ScratchLease::~ScratchLease() {
  ScratchPool& pool = scratch_pool();
  const std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free.push_back({device_, data_, bytes_});
  pool.cached_bytes += bytes_;
  std::size_t blocks = 0, bytes = 0;
  for (const ScratchPool::Block& b : pool.free)
    if (b.device == device_) ++blocks, bytes += b.bytes;
  for (auto it = pool.free.begin(); it != pool.free.end() && (blocks > max_cached_blocks || bytes > max_cached_bytes);) {
    if (it->device != device_) {
      ++it;
      continue;
    }
    omp_target_free(it->data, it->device);
    --blocks, bytes -= it->bytes, pool.cached_bytes -= it->bytes;
    it = pool.free.erase(it);
  }
}

}  // namespace detail
}  // namespace hk
