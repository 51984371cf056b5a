// Small blocks kept in device memory from call to call (kept_device_copies.hpp).
#include "runtime/platform/kept_device_copies.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "hetkern/error.hpp"
#include "runtime/platform/device_memory.hpp"

namespace hk::detail {
namespace {

constexpr int slot_count = 16;

// One kind of block's slots on one device and what each holds, mirrored on the host, and the
// hashes of the last blocks that matched none (Fill::when_repeated: as many as there are slots, so
// that calls taking turns, a model's layers, find theirs again). The device memory (8 KB) lives as
// long as the process: the slots' contents are worth keeping, and no call needs it back.
struct Slots {
  std::mutex mutex;
  unsigned char* memory = nullptr;
  bool unavailable = false;
  std::array<std::array<unsigned char, KeptDeviceCopy::max_bytes>, slot_count> held{};
  std::array<std::size_t, slot_count> bytes{};  // 0: empty
  std::array<unsigned long long, slot_count> used{};
  unsigned long long clock = 0;
  std::array<std::size_t, slot_count> missed{};
  int next_missed = 0;
};

Slots& slots_of(int device, const char* owner) {
  static std::mutex mutex;
  static std::map<std::pair<int, std::string>, std::unique_ptr<Slots>> kept;
  const std::lock_guard lock(mutex);
  std::unique_ptr<Slots>& slots = kept[{device, owner}];
  if (!slots) slots = std::make_unique<Slots>();
  return *slots;
}

}  // namespace

const void* KeptDeviceCopy::keep(int device, const char* owner, const void* block, std::size_t bytes, Fill fill) {
  if (bytes == 0 || bytes > max_bytes || hold_) return nullptr;
  Slots& s = slots_of(device, owner);
  std::unique_lock lock(s.mutex, std::try_to_lock);
  if (!lock) return nullptr;
  if (!s.memory && !s.unavailable) {
    s.memory = static_cast<unsigned char*>(omp_target_alloc(slot_count * max_bytes, device));
    s.unavailable = s.memory == nullptr;
  }
  if (!s.memory) return nullptr;
  int oldest = 0;
  for (int i = 0; i < slot_count; ++i) {
    if (s.bytes[i] == bytes && std::memcmp(s.held[i].data(), block, bytes) == 0) {
      s.used[i] = ++s.clock;
      hold_ = std::move(lock);
      return s.memory + i * max_bytes;
    }
    if (s.used[i] < s.used[oldest]) oldest = i;
  }
  if (fill == Fill::when_repeated) {
    // A hash that collides only makes a copy one call early.
    const std::size_t hash = std::hash<std::string_view>{}({static_cast<const char*>(block), bytes});
    if (std::find(s.missed.begin(), s.missed.end(), hash) == s.missed.end()) {
      s.missed[std::size_t(s.next_missed)] = hash;
      s.next_missed = (s.next_missed + 1) % slot_count;
      return nullptr;
    }
  }
  unsigned char* at = s.memory + oldest * max_bytes;
  s.bytes[oldest] = 0;  // until the copy has succeeded
  try {
    copy_to_device(at, 0, block, bytes, device);
  } catch (const Error&) {
    return nullptr;
  }
  std::memcpy(s.held[oldest].data(), block, bytes);
  s.bytes[oldest] = bytes;
  s.used[oldest] = ++s.clock;
  hold_ = std::move(lock);
  return at;
}

}  // namespace hk::detail
