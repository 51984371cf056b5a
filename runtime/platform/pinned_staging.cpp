// Staged host <-> device copies (pinned_staging.hpp): two page-locked chunks per copy in flight,
// one crossing the link while host threads fill (or empty) the other.
#include "runtime/platform/pinned_staging.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "hetkern/error.hpp"

// LLVM's offload runtime: page-locked host memory that `device` reaches directly (cuMemAllocHost).
extern "C" void* llvm_omp_target_alloc_host(std::size_t bytes, int device);
extern "C" void llvm_omp_target_free_host(void* ptr, int device);

namespace hk::detail {
namespace {

// A chunk is long enough that its fixed cost (a driver call, a synchronization and a barrier of
// the copying threads) is small beside its time on the link, and a copy has up to eight, so that
// the first and the last chunk, which overlap nothing, are a small part of it. Buffers are
// allocated at the largest size.
constexpr std::size_t min_chunk_bytes = std::size_t(4) << 20;
constexpr std::size_t max_chunk_bytes = std::size_t(8) << 20;
// Host threads that fill or empty the chunks besides the one that drives the link. Each staged
// byte is read and written by them and read again by the link, so the host's memory bandwidth
// bounds a staged copy; past about seven threads they only slow each other and the link down
// (docs/performance.md).
constexpr int max_copy_threads = 7;
// Staging pairs kept for later copies (copies on several devices or threads at once each hold one).
constexpr std::size_t max_kept_pairs = 8;

struct Pair {
  int device;
  std::byte* base;  // two chunks, one after the other
};

struct Pool {
  std::mutex mutex;
  std::vector<Pair> free;
};
// Never destroyed: page-locked memory goes with the process, after the offload runtime.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

class PairLease {
 public:
  explicit PairLease(int device) : pair_{device, nullptr} {
    {
      Pool& p = pool();
      const std::lock_guard<std::mutex> lock(p.mutex);
      const auto it = std::find_if(p.free.begin(), p.free.end(), [&](const Pair& q) { return q.device == device; });
      if (it != p.free.end()) {
        pair_ = *it;
        p.free.erase(it);
        return;
      }
    }
    pair_.base = static_cast<std::byte*>(llvm_omp_target_alloc_host(2 * max_chunk_bytes, device));
  }
  ~PairLease() {
    if (!pair_.base) return;
    Pool& p = pool();
    const std::lock_guard<std::mutex> lock(p.mutex);
    p.free.push_back(pair_);
    if (p.free.size() > max_kept_pairs) {
      llvm_omp_target_free_host(p.free.front().base, p.free.front().device);
      p.free.erase(p.free.begin());
    }
  }
  PairLease(const PairLease&) = delete;
  PairLease& operator=(const PairLease&) = delete;
  explicit operator bool() const { return pair_.base != nullptr; }
  std::byte* chunk(std::size_t k) const { return pair_.base + (k % 2) * max_chunk_bytes; }

 private:
  Pair pair_;
};

// A copy of `bytes` in `count` chunks of `size` bytes (the last one shorter).
struct Chunks {
  std::size_t bytes, size, count;
  explicit Chunks(std::size_t total) : bytes(total), size(min_chunk_bytes) {
    while (size < max_chunk_bytes && size * 8 < bytes) size *= 2;
    count = (bytes + size - 1) / size;
  }
  std::size_t offset(std::size_t k) const { return k * size; }
  std::size_t length(std::size_t k) const { return std::min(size, bytes - k * size); }
};

// This worker's part of a host copy split over `workers` (cache-line multiples).
void copy_part(void* dst, const void* src, std::size_t bytes, int worker, int workers) {
  const std::size_t piece = (bytes / std::size_t(workers) + 63) / 64 * 64;
  const std::size_t begin = std::min(bytes, std::size_t(worker) * piece);
  const std::size_t end = worker == workers - 1 ? bytes : std::min(bytes, begin + piece);
  if (end > begin) std::memcpy(static_cast<std::byte*>(dst) + begin, static_cast<const std::byte*>(src) + begin, end - begin);
}

// Runs the pipeline over `chunks` steps plus one: at step k thread 0 moves a chunk across the link
// (`link(k)`) while the others fill or empty the other chunk (`host(k, worker, workers)`); with a
// team of one, thread 0 does both. Returns false when a link copy failed.
template <class Link, class Host>
bool pipeline(std::size_t chunks, Link link, Host host) {
  std::atomic<bool> failed{false};
  const int threads = std::clamp(omp_get_max_threads(), 1, max_copy_threads + 1);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), team = omp_get_num_threads();
    const int workers = team > 1 ? team - 1 : 1;
    for (std::size_t k = 0; k <= chunks; ++k) {
      // After a failed link copy nothing more is written: not the device's memory, not the caller's.
      if ((t != 0 || team == 1) && !failed.load(std::memory_order_relaxed)) host(k, team > 1 ? t - 1 : 0, workers);
      if (t == 0 && !failed.load(std::memory_order_relaxed) && !link(k)) failed = true;
#pragma omp barrier
    }
  }
  return !failed;
}

}  // namespace

bool staged_copy_to_device(void* device_dst, std::size_t dst_offset, const void* host_src,
                           std::size_t bytes, int device) {
  const PairLease staging(device);
  if (!staging) return false;
  const Chunks c(bytes);
  const auto* src = static_cast<const std::byte*>(host_src);
  const int host = omp_get_initial_device();
  // Step k fills chunk k and sends chunk k - 1.
  const bool ok = pipeline(
      c.count,
      [&](std::size_t k) {
        return k == 0 || omp_target_memcpy(device_dst, staging.chunk(k - 1), c.length(k - 1),
                                           dst_offset + c.offset(k - 1), 0, device, host) == 0;
      },
      [&](std::size_t k, int worker, int workers) {
        if (k < c.count) copy_part(staging.chunk(k), src + c.offset(k), c.length(k), worker, workers);
      });
  if (!ok) throw Error(Errc::invalid_parameter, "device", "upload", "the copy to the device failed");
  return true;
}

bool staged_copy_to_host(void* host_dst, const void* device_src, std::size_t src_offset,
                         std::size_t bytes, int device) {
  const PairLease staging(device);
  if (!staging) return false;
  const Chunks c(bytes);
  auto* dst = static_cast<std::byte*>(host_dst);
  const int host = omp_get_initial_device();
  // Step k receives chunk k and empties chunk k - 1.
  const bool ok = pipeline(
      c.count,
      [&](std::size_t k) {
        return k == c.count || omp_target_memcpy(staging.chunk(k), device_src, c.length(k), 0,
                                                 src_offset + c.offset(k), host, device) == 0;
      },
      [&](std::size_t k, int worker, int workers) {
        if (k > 0) copy_part(dst + c.offset(k - 1), staging.chunk(k - 1), c.length(k - 1), worker, workers);
      });
  if (!ok) throw Error(Errc::invalid_parameter, "device", "download", "the copy from the device failed");
  return true;
}

std::size_t release_staging_buffers() {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  const std::size_t released = p.free.size() * 2 * max_chunk_bytes;
  for (const Pair& q : p.free) llvm_omp_target_free_host(q.base, q.device);
  p.free.clear();
  return released;
}

}  // namespace hk::detail
