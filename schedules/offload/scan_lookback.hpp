// What the look-back kernels (scan.offload_chained, and scan.offload_columns in chunks) share: the
// states of published tile words, their single-access loads and stores, and the ticket from
// which teams draw their tiles in order.
#pragma once

#include <omp.h>

#include <bit>

#include "schedules/offload/scan_tiles.hpp"

namespace hk::detail::offload::scan {

// The states of a chained call's tiles (TileWord::state): a published fold, a published inclusive
// prefix. Each call has its own (from its count in the kept scratch), above those of every earlier
// call: any smaller state, a word that zeroing or an earlier call left, reads as pending.
struct TileStates {
  unsigned long long folded, prefixed;

  explicit TileStates(unsigned long long folded_state) : folded(folded_state), prefixed(folded_state + 1) {}
  bool pending(unsigned long long state) const { return state < folded; }
};

#ifdef __NVPTX__
inline void store_tile_word(TileWord* p, unsigned long long state, unsigned long long value) {
  asm volatile("st.relaxed.gpu.v2.b64 [%0], {%1, %2};" ::"l"(p), "l"(state), "l"(value) : "memory");
}

inline void load_tile_word(const TileWord* p, unsigned long long& state, unsigned long long& value) {
  asm volatile("ld.relaxed.gpu.v2.b64 {%0, %1}, [%2];" : "=l"(state), "=l"(value) : "l"(p) : "memory");
}

template <class A> unsigned long long to_word_bits(A a) {
  if constexpr (sizeof(A) == 8)
    return std::bit_cast<unsigned long long>(a);
  else
    return std::bit_cast<u32>(a);
}

template <class A> A from_word_bits(unsigned long long b) {
  if constexpr (sizeof(A) == 8)
    return std::bit_cast<A>(b);
  else
    return std::bit_cast<A>(u32(b));
}

// Draws the team's next tile (a new ticket) and leaves it in team memory (sh->ticket). By one
// thread.
template <class Shared> void leave_next_ticket(unsigned long long* ticket, Shared* sh) {
  std::int64_t next;
#pragma omp atomic capture
  next = (*ticket)++;
  sh->ticket = next;
}

// A team's last act in a chained kernel, by the thread that drew its tiles, after its last draw:
// counts the team done, and the last team done leaves the ticket and the count at zero for the next
// call. The count is an acq_rel atomic (inline PTX: LLVM 19 lowers `omp atomic acq_rel` to a relaxed
// atom), so every team's draws come before the last team's reset.
inline void leave_chained(unsigned long long* ticket, unsigned long long* done) {
  unsigned long long before;
  asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], 1;" : "=l"(before) : "l"(done) : "memory");
  if (before + 1 == static_cast<unsigned long long>(omp_get_num_teams())) {
    *ticket = 0;
    *done = 0;
  }
}

// The team's first tile: a ticket, handed to all its threads.
template <class Shared> std::int64_t first_ticket(unsigned long long* ticket, Shared* sh) {
  if (omp_get_thread_num() == 0) leave_next_ticket(ticket, sh);
#pragma omp barrier
  return sh->ticket;
}

#endif

}  // namespace hk::detail::offload::scan
