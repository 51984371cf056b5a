// Kept device scratch blocks (kept_scratch.hpp). Compiled with the offload flags: a new block is
// zeroed by a target region on its device.
#include "runtime/platform/kept_scratch.hpp"

#include <omp.h>

#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "runtime/platform/device_memory.hpp"

namespace hk::detail {
namespace {

// By device and owner; never destroyed, as the scratch pool (device_memory.cpp): freeing device
// memory after the offload runtime shut down would fail.
struct KeptScratches {
  std::mutex mutex;
  std::map<std::pair<int, std::string>, KeptScratch> by_owner;
};
KeptScratches& kept_scratches() {
  static auto* kept = new KeptScratches;
  return *kept;
}

void free_kept(KeptScratch& scratch, int device) {
  if (scratch.data) omp_target_free(scratch.data, device);
  scratch.data = nullptr;
  scratch.bytes = 0;
}

}  // namespace

KeptScratch& kept_scratch(int device, const char* owner) {
  KeptScratches& kept = kept_scratches();
  const std::lock_guard<std::mutex> lock(kept.mutex);
  return kept.by_owner[{device, owner}];
}

void reserve_kept(KeptScratch& scratch, int device, std::size_t bytes) {
  if (bytes <= scratch.bytes) return;
  free_kept(scratch, device);
  const std::size_t size = std::bit_ceil(bytes < 8 ? std::size_t(8) : bytes);
  auto* words = static_cast<std::uint64_t*>(device_alloc(size, device, "scratch"));
  const std::int64_t count = std::int64_t(size / sizeof(std::uint64_t));
#pragma omp target teams distribute parallel for device(device) is_device_ptr(words)
  for (std::int64_t i = 0; i < count; ++i) words[i] = 0;
  scratch.data = words;
  scratch.bytes = size;
}

void trim_kept(KeptScratch& scratch, int device, std::size_t keep) {
  if (scratch.bytes > keep) free_kept(scratch, device);
}

std::size_t release_kept_scratches() {
  KeptScratches& kept = kept_scratches();
  const std::lock_guard<std::mutex> lock(kept.mutex);
  std::size_t released = 0;
  for (auto& [key, scratch] : kept.by_owner) {
    const std::lock_guard<std::mutex> in_use(scratch.mutex);
    released += scratch.bytes;
    free_kept(scratch, key.first);
  }
  return released;
}

}  // namespace hk::detail
