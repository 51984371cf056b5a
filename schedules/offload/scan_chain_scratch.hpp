// The device scratch of the look-back kernels (scan.offload_chained, and scan.offload_columns in
// chunks), kept across calls on each device: the ticket, the count of teams done, a TileWord per
// tile. Host code, offload builds only.
#pragma once

#include <cstdint>
#include <mutex>

#include "runtime/platform/kept_scratch.hpp"
#include "schedules/offload/scan_tiles.hpp"

namespace hk::detail::offload::scan {

// The ticket and the count of teams done each in its own 64 bytes, then the words. Zeroed once,
// when allocated; each call takes the next count of calls, its tile states (TileStates) reading
// every word that zeroing or an earlier call left as pending, and its last team leaves the ticket
// and the count at zero (leave_chained). So a call needs no launch to set the scratch up. One call
// at a time per device holds it; more than chain_kept_bytes go back at the end of the call.
inline constexpr std::size_t chain_words_offset = 128, chain_kept_bytes = std::size_t(64) << 20;

// Holds `scratch` for one call of `words` tile words until the returned lock goes, and points a's
// ticket, count of teams done, words and states into it.
template <class T>
std::unique_lock<std::mutex> hold_chain_scratch(KeptScratch& scratch, int dev, std::int64_t words, KernelArgs<T>& a) {
  std::unique_lock<std::mutex> hold(scratch.mutex);
  reserve_kept(scratch, dev, chain_words_offset + std::size_t(words) * sizeof(TileWord));
  char* const base = static_cast<char*>(scratch.data);
  a.ticket = reinterpret_cast<unsigned long long*>(base);
  a.done = reinterpret_cast<unsigned long long*>(base + 64);
  a.words = reinterpret_cast<TileWord*>(base + chain_words_offset);
  a.folded = 2 * ++scratch.calls;
  return hold;
}

}  // namespace hk::detail::offload::scan
