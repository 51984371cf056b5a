// Tensor maps kept in device memory from call to call (kept_tensor_maps.hpp).
#include "runtime/platform/kept_tensor_maps.hpp"

#include <omp.h>

#include <array>
#include <cstring>
#include <map>
#include <memory>

namespace hk::detail {
namespace {

constexpr int slot_count = 16;

// One device's slots and what each holds, mirrored on the host. The device memory (4 KB) lives as
// long as the process: the slots' contents are worth keeping, and no call needs it back.
struct Slots {
  std::mutex mutex;
  unsigned char* memory = nullptr;
  bool unavailable = false;
  std::array<std::array<unsigned char, KeptTensorMaps::max_bytes>, slot_count> held{};
  std::array<std::size_t, slot_count> bytes{};  // 0: empty
  std::array<unsigned long long, slot_count> used{};
  unsigned long long clock = 0;
};

Slots& slots_of(int device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<Slots>> devices;
  const std::lock_guard lock(mutex);
  std::unique_ptr<Slots>& slots = devices[device];
  if (!slots) slots = std::make_unique<Slots>();
  return *slots;
}

}  // namespace

const void* KeptTensorMaps::keep(int device, const void* maps, std::size_t bytes) {
  if (bytes == 0 || bytes > max_bytes || hold_) return nullptr;
  Slots& s = slots_of(device);
  std::unique_lock lock(s.mutex, std::try_to_lock);
  if (!lock) return nullptr;
  if (!s.memory && !s.unavailable) {
    s.memory = static_cast<unsigned char*>(omp_target_alloc(slot_count * max_bytes, device));
    s.unavailable = s.memory == nullptr;
  }
  if (!s.memory) return nullptr;
  int oldest = 0;
  for (int i = 0; i < slot_count; ++i) {
    if (s.bytes[i] == bytes && std::memcmp(s.held[i].data(), maps, bytes) == 0) {
      s.used[i] = ++s.clock;
      hold_ = std::move(lock);
      return s.memory + i * max_bytes;
    }
    if (s.used[i] < s.used[oldest]) oldest = i;
  }
  unsigned char* at = s.memory + oldest * max_bytes;
  s.bytes[oldest] = 0;  // until the copy has succeeded
  if (omp_target_memcpy(at, maps, bytes, 0, 0, device, omp_get_initial_device()) != 0) return nullptr;
  std::memcpy(s.held[oldest].data(), maps, bytes);
  s.bytes[oldest] = bytes;
  s.used[oldest] = ++s.clock;
  hold_ = std::move(lock);
  return at;
}

}  // namespace hk::detail
