// scan.offload_columns in chunks: each team takes a block of lines and a chunk of the axis at a
// time, and finds the carry into its chunk by a look-back along the lines over the chunks before.
#pragma once

#include "schedules/offload/scan_columns_kernel.hpp"
#include "schedules/offload/scan_lookback.hpp"

namespace hk::detail::offload::scan {

// Team memory of the chained kernel ahead of the warps' totals: the next ticket in 16 bytes, then a
// value per line of the block (the chunk's folds, then the carries into it).
struct alignas(16) ColumnChainHead {
  std::int64_t ticket;
};
template <class Acc> constexpr std::int64_t column_chain_head_bytes(int lanes, int V) {
  return std::int64_t(sizeof(ColumnChainHead)) + (std::int64_t(lanes) * V * std::int64_t(sizeof(Acc)) + 15) / 16 * 16;
}

// Team memory of the chained kernel after its ring of `stages` tiles: per thread and tile of a
// chunk, the carry into the thread's rows of each of its V lines.
template <class Acc> constexpr std::int64_t column_chain_kept_bytes(int threads, int stages, int V) {
  return std::int64_t(threads) * stages * V * std::int64_t(sizeof(Acc));
}

#ifdef __NVPTX__
/// Tile words a thread of the chained columns kernel reads at once in a look-back.
inline constexpr int column_lookback_window = 8;

// The carry into chunk `before` (> 0) of a line from the tile words of the chunks before it
// (`word`: the one just before, each earlier one `stride` words further back): their folds back
// to the nearest prefix, combined with it. By one thread, column_lookback_window words a step
// loaded together, so that a run of chunks that have only folded costs one wait per step, not one
// each; it waits only for the words up to the nearest prefix. A line's first chunk always
// publishes its prefix.
template <class Op, class Acc> Acc column_lookback(const TileWord* word, TileStates st, std::int64_t stride, std::int64_t before) {
  constexpr int D = column_lookback_window;
  Acc acc = inclusive_start<Op, Acc>();
  for (;; word -= D * stride, before -= D) {
    const int m = before < D ? int(before) : D;
    unsigned long long state[D], bits[D];
#pragma unroll
    for (int i = 0; i < D; ++i)
      if (i < m) load_tile_word(word - i * stride, state[i], bits[i]);
    int upto;  // the nearest prefix among the m, else m - 1
    bool prefixed;
    for (;;) {
      upto = m - 1;
      prefixed = false;
      bool waiting = false;
#pragma unroll
      for (int i = D - 1; i >= 0; --i)
        if (i < m && state[i] == st.prefixed) {
          upto = i;
          prefixed = true;
        }
#pragma unroll
      for (int i = 0; i < D; ++i)
        if (i <= upto && st.pending(state[i])) {
          load_tile_word(word - i * stride, state[i], bits[i]);
          waiting = true;
        }
      if (!waiting) break;
    }
#pragma unroll
    for (int i = 0; i < D; ++i)
      if (i <= upto) acc = Op::apply(from_word_bits<Acc>(bits[i]), acc);
    if (prefixed) return acc;
  }
}

// Chained scan.offload_columns: the axis cut into chunks of whole tiles (about a.tiles of them),
// the groups into blocks of W as in gpu_columns. A team draws units (chunk k of block b) in order
// from a ticket, chunk by chunk, so that the chunks before a unit along its lines were drawn by
// teams that run. Per unit the team folds its chunk (column_group, no stores), publishes each
// line's fold, looks back for each line's carry (a thread a line) and publishes its prefix, then
// scans the chunk again from those carries: from the ring in team memory where the chunk is at
// most `stages` tiles, else from memory again (mostly the L2). Teams of one partial warp, which cannot
// share a chunk's rows among warps, scan their lines serially (the same in every team of a launch).
template <class T, class Op, int V, int Cap, bool Staged>
[[gnu::always_inline]] inline void gpu_columns_chained(const KernelArgs<T>& a) {
  using Acc = AccOf<T>;
  const ScanLayout& s = a.s;
  const int n = omp_get_num_threads(), t = omp_get_thread_num(), Wp = n / 32, w = t >> 5;
  if (Wp == 0) {
    serial_lines<T, Op>(a);
    return;
  }
  const u32 lane = lane_id(), mask = warp_mask(n);
  const std::int64_t groups = line_count(s) / V, lines = groups * V;
  const int W = a.lanes < 1 ? 1 : a.lanes > 32 ? 32 : a.lanes, L = 32 / W, r = int(lane) / W;
  const int group_lane = int(lane) % W;
  const ColumnPlace place{w, Wp, r, L, W, lane, mask, w < Wp};
  const std::int64_t blocks = (groups + W - 1) / W, rows = std::int64_t(Wp) * L * a.items;
  const std::int64_t chunk = ((s.length + a.tiles - 1) / a.tiles + rows - 1) / rows * rows;
  const std::int64_t units = blocks * ((s.length + chunk - 1) / chunk);
  char* const base = static_cast<char*>(llvm_omp_target_dynamic_shared_alloc());
  auto* const head = reinterpret_cast<ColumnChainHead*>(base);
  Acc* const line_values = reinterpret_cast<Acc*>(base + sizeof(ColumnChainHead));
  Acc* const folds = reinterpret_cast<Acc*>(base + column_chain_head_bytes<Acc>(W, V));
  ColumnRing ring;
  if constexpr (Staged) ring = column_ring<T, V>(a, folds, W);
  // A chunk of at most `stages` tiles stays in the ring for its scan, and the carries into each
  // thread's rows of its tiles after the ring (column_chain_kept_bytes).
  const bool resident = Staged && chunk <= std::int64_t(ring.stages) * rows;
  Acc* const kept = resident ? reinterpret_cast<Acc*>(base + column_chain_head_bytes<Acc>(W, V) +
                                                      column_folds_bytes<Acc>(n, W, V) +
                                                      std::int64_t(ring.stages) * ring.stage_bytes) + t
                             : nullptr;
  const TileStates st(a.folded);
  std::int64_t u = first_ticket(a.ticket, head);
  while (u < units) {
    const std::int64_t k = u / blocks, b = u % blocks, g = b * W + group_lane;
    const bool valid = place.in_warp && r < L && g < groups;
    const std::int64_t begin = k * chunk, end = begin + chunk < s.length ? begin + chunk : s.length;
    Acc c[V];
#pragma unroll
    for (int j = 0; j < V; ++j) c[j] = inclusive_start<Op, Acc>();
    // Two passes through one inlined copy of column_group: the fold, then the scan from the carries.
    for (int pass = 0;; ++pass) {
      column_group<T, Op, V, Cap, Staged>(a, folds, ring, g, valid, place, begin, end, pass == 1, pass == 1 && resident,
                                          kept, c);
      if (pass == 1) break;
      if (valid && w == 0 && r == 0)
#pragma unroll
        for (int j = 0; j < V; ++j) line_values[group_lane * V + j] = c[j];
#pragma omp barrier
      if (t == 0) leave_next_ticket(a.ticket, head);
      const std::int64_t block_groups = groups - b * W < W ? groups - b * W : W;
      for (std::int64_t i = t; i < block_groups * V; i += n) {
        TileWord* const word = a.words + k * lines + b * W * V + i;
        const Acc fold = line_values[i];
        Acc carry = a.start;
        if (k > 0) {
          store_tile_word(word, st.folded, to_word_bits(fold));
          carry = column_lookback<Op, Acc>(word - lines, st, lines, k);
        }
        store_tile_word(word, st.prefixed, to_word_bits(Op::apply(carry, fold)));
        line_values[i] = carry;
      }
#pragma omp barrier
      u = head->ticket;
      if (valid)
#pragma unroll
        for (int j = 0; j < V; ++j) c[j] = line_values[group_lane * V + j];
    }
    // The ticket and the line values are rewritten for the next unit.
#pragma omp barrier
  }
  if (t == 0) leave_chained(a.ticket, a.done);
}
#endif

}  // namespace hk::detail::offload::scan
