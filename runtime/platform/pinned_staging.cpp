// Staged host <-> device copies (pinned_staging.hpp): a ring of page-locked slots per copy in
// flight. Host threads copy pieces of the caller's memory into (or out of) the slots, claiming
// them in order, while one or two threads move whole chunks across the link; nobody waits for
// anybody but the owner of the slot or chunk it needs, so the link never idles behind a barrier.
#include "runtime/platform/pinned_staging.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "hetkern/error.hpp"
#include "runtime/platform/staging_pipeline.hpp"
#include "runtime/platform/streaming_copy.hpp"

// LLVM's offload runtime: page-locked host memory that `device` reaches directly (cuMemAllocHost).
extern "C" void* llvm_omp_target_alloc_host(std::size_t bytes, int device);
extern "C" void llvm_omp_target_free_host(void* ptr, int device);

namespace hk::detail {
namespace {

// Copies out of the staging at least this large bypass the host's caches as they write (no read
// for ownership of the destination, which nobody reads before the copy ends).
constexpr std::size_t streaming_store_min_bytes = std::size_t(64) << 20;
// Rings kept for later copies (copies on several devices or threads at once each hold one).
constexpr std::size_t max_kept_rings = 8;

struct Ring {
  int device;
  std::byte* base;  // staging_ring_slots slots of staging_slot_bytes
};

struct Pool {
  std::mutex mutex;
  std::vector<Ring> free;
};
// Never destroyed: page-locked memory goes with the process, after the offload runtime.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

class RingLease {
 public:
  explicit RingLease(int device) : ring_{device, nullptr} {
    {
      Pool& p = pool();
      const std::lock_guard<std::mutex> lock(p.mutex);
      const auto it = std::find_if(p.free.begin(), p.free.end(), [&](const Ring& q) { return q.device == device; });
      if (it != p.free.end()) {
        ring_ = *it;
        p.free.erase(it);
        return;
      }
    }
    ring_.base = static_cast<std::byte*>(llvm_omp_target_alloc_host(staging_ring_slots * staging_slot_bytes, device));
  }
  ~RingLease() {
    if (!ring_.base) return;
    Pool& p = pool();
    const std::lock_guard<std::mutex> lock(p.mutex);
    p.free.push_back(ring_);
    if (p.free.size() > max_kept_rings) {
      llvm_omp_target_free_host(p.free.front().base, p.free.front().device);
      p.free.erase(p.free.begin());
    }
  }
  RingLease(const RingLease&) = delete;
  RingLease& operator=(const RingLease&) = delete;
  explicit operator bool() const { return ring_.base != nullptr; }
  std::byte* slot(std::size_t s) const { return ring_.base + s * staging_slot_bytes; }

 private:
  Ring ring_;
};

}  // namespace

bool staged_segments_to_device(const std::vector<CopySegment>& segments, int device,
                               const std::function<void(std::size_t)>& landed) {
  const RingLease ring(device);
  if (!ring) return false;
  const int host = omp_get_initial_device();
  const bool ok = run_staged_segments(
      StagedSegments(segments), StagingDirection::to_device,
      [&](std::size_t i, std::size_t at, std::size_t s, std::size_t within, std::size_t length) {
        const CopySegment& g = segments[i];
        return omp_target_memcpy(g.device, ring.slot(s) + within, length, g.device_offset + at, 0, device, host) == 0;
      },
      [&](std::size_t i, std::size_t at, std::size_t s, std::size_t within, std::size_t length) {
        // Streaming stores: the link reads the slot from memory, so nothing gains from reading its
        // lines first or keeping them in the caches, where the caller's data stays instead.
        streaming_copy(ring.slot(s) + within, static_cast<const std::byte*>(segments[i].host) + at, length);
      },
      [](std::size_t) { return true; },
      [&](std::size_t i) {
        if (landed) landed(i);
      });
  if (!ok) throw Error(Errc::invalid_parameter, "device", "upload", "the copy to the device failed");
  return true;
}

bool staged_segments_to_host(const std::vector<CopySegment>& segments, int device,
                             const std::function<bool(std::size_t)>& ready) {
  const RingLease ring(device);
  if (!ring) return false;
  const int host = omp_get_initial_device();
  const StagedSegments staged(segments);
  const bool streaming = staged.bytes() >= streaming_store_min_bytes;
  std::atomic<bool> stopped{false};
  const bool ok = run_staged_segments(
      staged, StagingDirection::to_host,
      [&](std::size_t i, std::size_t at, std::size_t s, std::size_t within, std::size_t length) {
        const CopySegment& g = segments[i];
        return omp_target_memcpy(ring.slot(s) + within, g.device, length, 0, g.device_offset + at, host, device) == 0;
      },
      [&](std::size_t i, std::size_t at, std::size_t s, std::size_t within, std::size_t length) {
        std::byte* const dst = static_cast<std::byte*>(segments[i].host) + at;
        if (streaming)
          streaming_copy(dst, ring.slot(s) + within, length);
        else
          std::memcpy(dst, ring.slot(s) + within, length);
      },
      [&](std::size_t i) {
        if (!ready || ready(i)) return true;
        stopped = true;
        return false;
      },
      [](std::size_t) {});
  if (!ok && !stopped) throw Error(Errc::invalid_parameter, "device", "download", "the copy from the device failed");
  return true;
}

std::size_t release_staging_buffers() {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  const std::size_t released = p.free.size() * staging_ring_slots * staging_slot_bytes;
  for (const Ring& q : p.free) llvm_omp_target_free_host(q.base, q.device);
  p.free.clear();
  return released;
}

}  // namespace hk::detail
