// The chained kernels of scan.offload_chained: few long lines cut into tiles that teams draw in
// order from a ticket, each tile's carry found by a decoupled look-back over its predecessors'
// published folds. Two forms: tiles in registers, and tiles staged through team memory.
#pragma once

#include "schedules/offload/scan_chained_staging.hpp"
#include "schedules/offload/scan_lookback.hpp"
#include "schedules/offload/scan_tiles.hpp"
#include "schedules/offload/scan_limits.hpp"

namespace hk::detail::offload::scan {

#ifdef __NVPTX__
// Decoupled look-back by one warp for tile u, the b-th (b > 0) of its line: lane i reads tile
// u-1-i, the warp combines them back to the nearest one holding its inclusive prefix (a tile past
// the line's start counts as one holding the identity), and moves 32 further back when there is
// none. It waits, as a warp, only for the lanes up to the nearest prefix (all 32 while there is
// none): a pending tile behind a prefix does not hold it up. Returns the carry into tile u.
template <class Op, class Acc>
Acc chained_lookback(const TileWord* words, TileStates st, std::int64_t u, std::int64_t b, u32 lane, u32 mask) {
  Acc acc = inclusive_start<Op, Acc>();
  const std::int64_t line_first = u - b;
  for (std::int64_t last = u - 1;; last -= 32) {
    const std::int64_t j = last - std::int64_t(lane);
    const bool in_line = j >= line_first;
    unsigned long long state = st.prefixed, bits = to_word_bits(inclusive_start<Op, Acc>());
    if (in_line) load_tile_word(&words[j], state, bits);
    u32 stops = ballot(state == st.prefixed, mask);
    // The lanes up to the first one holding a prefix (its lowest bit doubled, less one; all when
    // that is lane 31 or there is none).
    while (ballot(st.pending(state), mask) & (stops ? (stops & (0u - stops)) * 2u - 1u : ~0u)) {
      if (st.pending(state)) load_tile_word(&words[j], state, bits);
      stops = ballot(state == st.prefixed, mask);
    }
    const u32 upto = stops ? u32(__builtin_ctz(stops)) : 31u;
    Acc val = from_word_bits<Acc>(bits);
    if (lane > upto) val = inclusive_start<Op, Acc>();
    const Acc window = shfl_idx(warp_inclusive<Op>(val, lane, mask), upto, mask);
    acc = Op::apply(window, acc);
    if (stops) return acc;
  }
}

// Publishes the fold `total` of tile u, the b-th of its line (a line's first tile: its inclusive
// prefix at once, from the line's start value). By one thread, after the tile's block scan.
template <class Op, class Acc>
void publish_fold(TileWord* words, TileStates st, std::int64_t u, std::int64_t b, Acc total, Acc start) {
  if (b > 0)
    store_tile_word(&words[u], st.folded, to_word_bits(total));
  else
    store_tile_word(&words[u], st.prefixed, to_word_bits(Op::apply(start, total)));
}

// Warp 0 of a team of the register kernel, after the block scan of tile u: publishes the fold,
// looks back for the carry, publishes the inclusive prefix, leaves the carry and the team's next
// tile in team memory.
template <class Op, class Acc>
void chained_publish(TileWord* words, TileStates st, unsigned long long* ticket, TileShared<Acc>* sh, std::int64_t u,
                     std::int64_t b, Acc total, Acc start, u32 lane, u32 mask) {
  Acc carry = start;
  if (b > 0) {
    if (lane == 0) store_tile_word(&words[u], st.folded, to_word_bits(total));
    carry = chained_lookback<Op, Acc>(words, st, u, b, lane, mask);
  }
  if (lane == 0) {
    store_tile_word(&words[u], st.prefixed, to_word_bits(Op::apply(carry, total)));
    sh->carry = carry;
    leave_next_ticket(ticket, sh);
  }
}

// Chained tiles (decoupled look-back), register runs: a team takes tiles of width elements in
// order from an atomic ticket, so that every predecessor of its tile belongs to a team that runs,
// scans each as gpu_rows does and gets its carry from chained_publish. For the layouts the staged
// kernel does not take (strided or unaligned lines, or tiles too large for team memory).
template <class T, class Op>
void gpu_chained(const KernelArgs<T>& a) {
  using Acc = AccOf<T>;
  const ScanLayout& s = a.s;
  const std::int64_t width = a.width, tiles = a.tiles;
  auto* sh = static_cast<TileShared<Acc>*>(llvm_omp_target_dynamic_shared_alloc());
  const int n = omp_get_num_threads(), t = omp_get_thread_num();
  const u32 lane = lane_id(), mask = warp_mask(n);
  const std::int64_t units = line_count(s) * tiles;
  // The tile is threads x per elements; per exceeds items only where the teams got fewer threads
  // than asked for. When the runs no longer fit the registers (or no team memory was granted),
  // every team scans its lines serially: the same decision in all teams of one launch.
  const int per = int((width + n - 1) / n);
  if (per > int(offload_chained_max_item_bytes / sizeof(T)) || !sh) {
    serial_lines<T, Op>(a);
    return;
  }
  const bool vec = a.vec && per % vec_elems<T> == 0 && width % vec_elems<T> == 0;
  std::int64_t u = first_ticket(a.ticket, sh);
  while (u < units) {
    const std::int64_t line = u / tiles, b = u % tiles, q = b * width;
    std::int64_t xo, yo;
    line_offsets(s, line, xo, yo);
    const std::int64_t start = q + std::int64_t(t) * per;
    const int count = run_count(q + width < s.length ? q + width : s.length, start, per);
    const bool v = vec && count == per;
    Run<T, offload_chained_max_item_bytes> run;
    run.load(a.x + xo + start * s.in_step, s.in_step, count, v);
    const Acc lane_before = tile_warp_scan<T, Op>(run, count, sh->warp_total[0], lane, mask);
#pragma omp barrier
    Acc warp_before, total;
    tile_block_scan<Op>(sh->warp_total[0], n, lane, mask, warp_before, total);
    if (t < 32) chained_publish<Op>(a.words, TileStates(a.folded), a.ticket, sh, u, b, total, a.start, lane, mask);
#pragma omp barrier
    const Acc carry = sh->carry;
    u = sh->ticket;
    run.template scan_store<Op>(a.y + yo + start * s.out_step, s.out_step, count, v,
                                Op::apply(Op::apply(carry, warp_before), lane_before), a.exclusive);
  }
  if (t == 0) leave_chained(a.ticket, a.done);
}

// Chained tiles staged through team memory, for contiguous 16-byte aligned lines: a tile comes in
// by asynchronous 16-byte copies (consecutive threads on consecutive chunks), each thread folds and
// later scans its run of per elements in place there, and the tile goes out in 16-byte chunks
// again; the data in flight holds no registers. The look-back is deferred by one round: in its k-th
// round a team folds tile k and publishes its fold, then looks back for tile k - 1, scans it and
// copies it out, and issues the copy-in of tile k + 1 into tile k - 1's buffer. A tile's fold thus
// waits for its own data only, never for its team's look-back of an earlier tile, so the
// predecessors a look-back meets have seldom not yet published theirs (docs/gpu-measurements.md,
// scan chained). Every thread copies into a buffer only the chunks it copied out of it itself, so
// a buffer is refilled without a barrier. A team in its look-back holds just one tile drawn and not
// yet folded, drawn after the tile it looks back for, so the look-back of the least such tile
// always finishes. Every tile is scanned from the identity during the look-back and gets the carry
// on the way out, which saves a barrier per tile: integers, whose wrapping sums and products
// regroup exactly, in place; floating types as their prefixes in the accumulator type, each cut in
// two halves (the low ones in a third buffer: StagedRun::scan_split), so that each output is still
// rounded once, from carry (+) prefix in the accumulator.
template <class T, class Op>
void gpu_chained_staged(const KernelArgs<T>& a) {
  using Acc = AccOf<T>;
  constexpr int ve = vec_elems<T>;
  const ScanLayout& s = a.s;
  const std::int64_t width = a.width, tiles = a.tiles;
  char* const base = static_cast<char*>(llvm_omp_target_dynamic_shared_alloc());
  auto* sh = reinterpret_cast<StagedShared<Acc>*>(base);
  const int n = omp_get_num_threads(), t = omp_get_thread_num();
  const u32 lane = lane_id(), mask = warp_mask(n);
  const std::int64_t units = line_count(s) * tiles;
  const int per = int((width + n - 1) / n);
  // Fewer threads than asked for make longer runs, which may not fit the team memory granted:
  // then every team scans its lines serially (the same decision in all teams of one launch).
  if (!base || reinterpret_cast<std::uintptr_t>(base) % 16 || per % ve || staged_team_bytes<T>(n, per) > a.team_bytes) {
    serial_lines<T, Op>(a);
    return;
  }
  const int stride = int(staged_run_stride<T>(per));
  char* const buffers = base + staged_head_bytes<Acc>();
  const std::int64_t buffer_bytes = std::int64_t(n) * stride;
  char* const side = buffers + 2 * buffer_bytes;  // floating types only
  const ChunkWalk walk = chunk_walk(t, n, per / ve, stride);
  // The thread that draws tiles: outside warp 0, whose look-back it then overlaps.
  const int drawer = n > 32 ? 32 : 0;
  if (t == 0) draw_tile(a.ticket, sh->drawn[0], s, units, tiles, width);
#pragma omp barrier
  stage_in_drawn(a.x, sh->drawn[0], units, buffers, walk, t, n);
  // The tile folded in the previous round, awaiting its look-back: its fold, the thread's place in it.
  bool held = false;
  Acc held_lane_before = inclusive_start<Op, Acc>(), held_warp_before = held_lane_before, held_total = held_lane_before;
  for (int k = 0;; ++k) {
    const DrawnTile& d = sh->drawn[k % 3];
    const bool fresh = d.u < units;
    if (!fresh && !held) break;
    copy_async_wait<0>();
#pragma omp barrier
    Acc lane_before = inclusive_start<Op, Acc>(), warp_before = lane_before, total = lane_before;
    if (fresh) {
      const int count = run_count(d.tile.count, std::int64_t(t) * per, per);
      const StagedRun<T> run{buffers + (k % 2) * buffer_bytes + std::int64_t(t) * stride};
      lane_before = tile_warp_scan<T, Op>(run, count, sh->warp_total, lane, mask);
#pragma omp barrier
      tile_block_scan<Op>(sh->warp_total, n, lane, mask, warp_before, total);
      if (t == 0) publish_fold<Op>(a.words, TileStates(a.folded), d.u, d.tile.b, total, a.start);
    }
    if (t == drawer) draw_tile(a.ticket, sh->drawn[(k + 1) % 3], s, units, tiles, width);
    if (held) {
      const DrawnTile& h = sh->drawn[(k + 2) % 3];
      const int count = run_count(h.tile.count, std::int64_t(t) * per, per);
      char* const buffer = buffers + ((k + 1) % 2) * buffer_bytes;
      StagedRun<T> run{buffer + std::int64_t(t) * stride};
      const Acc run_start = Op::apply(held_warp_before, held_lane_before);
      if constexpr (std::is_integral_v<T>)
        run.template scan<Op>(count, run_start, a.exclusive);
      else
        run.template scan_split<Op>(count, run_start, a.exclusive, side + std::int64_t(t) * stride);
      if (t < 32) {
        Acc carry = a.start;
        if (h.tile.b > 0) {
          carry = chained_lookback<Op, Acc>(a.words, TileStates(a.folded), h.u, h.tile.b, lane, mask);
          if (lane == 0)
            store_tile_word(&a.words[h.u], TileStates(a.folded).prefixed, to_word_bits(Op::apply(carry, held_total)));
        }
        if (lane == 0) sh->carry = carry;
      }
#pragma omp barrier
      stage_out<T, Op>(buffer, side, int(h.tile.count), a.y + h.tile.yo, walk, n, sh->carry);
      // Tile k + 1 goes where tile k - 1 was.
      stage_in_drawn(a.x, sh->drawn[(k + 1) % 3], units, buffer, walk, t, n);
    } else {
#pragma omp barrier
      stage_in_drawn(a.x, sh->drawn[(k + 1) % 3], units, buffers + ((k + 1) % 2) * buffer_bytes, walk, t, n);
    }
    held = fresh;
    held_lane_before = lane_before;
    held_warp_before = warp_before;
    held_total = total;
  }
  // The drawer drew the team's first tile too, or came after it through the barriers since.
  if (t == drawer) leave_chained(a.ticket, a.done);
}
#endif

}  // namespace hk::detail::offload::scan
