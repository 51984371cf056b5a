// The rows kernel of scan.offload_rows: a team per line in turn, each line walked in tiles of threads x
// items elements held in registers, one barrier per tile.
#pragma once

#include "schedules/offload/scan_tiles.hpp"
#include "schedules/offload/scan_limits.hpp"

namespace hk::detail::offload::scan {

#ifdef __NVPTX__
// The striped form of a rows tile, used when the tile lies wholly inside its line and 16-byte
// accesses are allowed: warp w holds the tile's elements from w * 32 * items on, lane-interleaved
// in 16-byte vectors (vector j of lane l at vector j * lanes + l of the warp's segment), so that
// every load and store of a warp covers lanes x 16 contiguous bytes. The run's registers hold the
// lane's vectors in order.
template <class T, std::int64_t MaxBytes>
void striped_load(Run<T, MaxBytes>& run, const T* segment, int lanes, u32 lane, int vectors) {
  constexpr int ve = vec_elems<T>;
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      const u32x4 w = *reinterpret_cast<const u32x4*>(segment + (std::int64_t(j) * lanes + lane) * ve);
      __builtin_memcpy(&run.v[j * ve], &w, 16);
    }
}

// Warp part of a striped tile: each vector position j is a contiguous chunk of the warp's
// segment, scanned across the lanes with shuffles. Fills, per vector, the fold of the segment
// before the lane's vector; returns the warp's total.
template <class T, class Op, std::int64_t MaxBytes>
AccOf<T> striped_warp_scan(const Run<T, MaxBytes>& run, int vectors, int lanes, u32 lane, u32 mask,
                           AccOf<T> (&before)[Run<T, MaxBytes>::cap / vec_elems<T>]) {
  using Acc = AccOf<T>;
  constexpr int ve = vec_elems<T>;
  Acc chunks = inclusive_start<Op, Acc>();
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      Acc f = inclusive_start<Op, Acc>();
#pragma unroll
      for (int i = 0; i < ve; ++i) f = Op::apply(f, widen(run.v[j * ve + i]));
      const Acc inc = warp_inclusive<Op>(f, lane, mask);
      const Acc up = shfl_up(inc, 1, mask);
      before[j] = lane == 0 ? chunks : Op::apply(chunks, up);
      chunks = Op::apply(chunks, shfl_idx(inc, u32(lanes - 1), mask));
    }
  return chunks;
}

// Rescans the lane's vectors from carry c (the fold before the warp's segment) and stores them
// where striped_load read them.
template <class T, class Op, std::int64_t MaxBytes>
void striped_scan_store(Run<T, MaxBytes>& run, T* segment, int lanes, u32 lane, int vectors, AccOf<T> c,
                        const AccOf<T> (&before)[Run<T, MaxBytes>::cap / vec_elems<T>], bool exclusive) {
  constexpr int ve = vec_elems<T>;
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      AccOf<T> e = Op::apply(c, before[j]);
#pragma unroll
      for (int i = 0; i < ve; ++i) {
        const AccOf<T> v = widen(run.v[j * ve + i]);
        if (exclusive) {
          run.v[j * ve + i] = narrow<T>(e);
          e = Op::apply(e, v);
        } else {
          e = Op::apply(e, v);
          run.v[j * ve + i] = narrow<T>(e);
        }
      }
      u32x4 w;
      __builtin_memcpy(&w, &run.v[j * ve], 16);
      *reinterpret_cast<u32x4*>(segment + (std::int64_t(j) * lanes + lane) * ve) = w;
    }
}

// A team takes lines in turn and walks each in tiles of threads x items elements: striped (above)
// where the tile lies inside its line and 16-byte accesses are allowed, else each thread's run of
// items consecutive elements (tile_warp_scan). The next tile's run (of this line or of the team's
// next one) is loaded before the current tile is scanned, so that its loads are in flight across
// the barrier and the stores, and with ahead > 0 the tile that many beyond the next is requested
// into the L2. Reading ahead is safe in place too: the elements read ahead are written only by
// the thread that reads them, later.
template <class T, class Op>
void gpu_rows(const KernelArgs<T>& a) {
  using Acc = AccOf<T>;
  using R = Run<T, offload_rows_max_item_bytes>;
  const ScanLayout& s = a.s;
  const T* const x = a.x;
  T* const y = a.y;
  const bool exclusive = a.exclusive;
  const int items = a.items;
  auto* sh = static_cast<TileShared<Acc>*>(llvm_omp_target_dynamic_shared_alloc());
  if (!sh) {  // no team-local memory granted: the serial body
    serial_lines<T, Op>(a);
    return;
  }
  const int n = omp_get_num_threads(), t = omp_get_thread_num();
  const u32 lane = lane_id(), mask = warp_mask(n);
  const std::int64_t width = std::int64_t(n) * items, lines = line_count(s), teams = omp_get_num_teams();
  const bool vec = a.vec && items % vec_elems<T> == 0;
  const std::int64_t first = std::int64_t(t) * items;
  // Striped tiles: the warp's segment, its lanes and the vectors of each lane.
  const std::int64_t segment = std::int64_t(t & ~31) * items;
  const int lanes = n - (t & ~31) < 32 ? n - (t & ~31) : 32, vectors = items / vec_elems<T>;
  const std::int64_t ahead = std::int64_t(a.ahead) * width;
  std::int64_t line = omp_get_team_num();
  if (line >= lines) return;
  std::int64_t xo, yo, q = 0;
  line_offsets(s, line, xo, yo);
  Acc carry = a.start;
  int count = run_count(s.length, first, items);
  bool striped = vec && width <= s.length;
  R run, next;
  if (striped)
    striped_load(run, x + xo + segment, lanes, lane, vectors);
  else
    run.load(x + xo + first * s.in_step, s.in_step, count, vec && count == items);
  int buf = 0;
  for (;;) {
    std::int64_t next_line = line, next_q = q + width, next_xo = xo, next_yo = yo;
    if (next_q >= s.length) {
      next_line += teams;
      next_q = 0;
      if (next_line < lines) line_offsets(s, next_line, next_xo, next_yo);
    }
    const bool more = next_line < lines;
    const int next_count = more ? run_count(s.length, next_q + first, items) : 0;
    const bool next_striped = vec && next_q + width <= s.length;
    if (more) {
      if (next_striped)
        striped_load(next, x + next_xo + next_q + segment, lanes, lane, vectors);
      else
        next.load(x + next_xo + (next_q + first) * s.in_step, s.in_step, next_count, vec && next_count == items);
    }
    if (ahead > 0 && vec && next_q + ahead + width <= s.length) {
      const T* p = x + next_xo + next_q + ahead + segment + std::int64_t(lane) * vec_elems<T>;
      for (int j = 0; j < vectors; ++j) prefetch_l2(p + std::int64_t(j) * lanes * vec_elems<T>);
    }
    Acc warp_before, total;
    if (striped) {
      Acc before[R::cap / vec_elems<T>];
      const Acc warp_fold = striped_warp_scan<T, Op>(run, vectors, lanes, lane, mask, before);
      if (lane == 0) sh->warp_total[buf][t >> 5] = warp_fold;
#pragma omp barrier
      tile_block_scan<Op>(sh->warp_total[buf], n, lane, mask, warp_before, total);
      striped_scan_store<T, Op>(run, y + yo + q + segment, lanes, lane, vectors, Op::apply(carry, warp_before),
                                before, exclusive);
    } else {
      const Acc lane_before = tile_warp_scan<T, Op>(run, count, sh->warp_total[buf], lane, mask);
#pragma omp barrier
      tile_block_scan<Op>(sh->warp_total[buf], n, lane, mask, warp_before, total);
      run.template scan_store<Op>(y + yo + (q + first) * s.out_step, s.out_step, count, vec && count == items,
                                  Op::apply(Op::apply(carry, warp_before), lane_before), exclusive);
    }
    buf ^= 1;
    if (!more) break;
    carry = next_line == line ? Op::apply(carry, total) : a.start;
    run = next;
    count = next_count;
    striped = next_striped;
    line = next_line;
    q = next_q;
    xo = next_xo;
    yo = next_yo;
  }
}
#endif

}  // namespace hk::detail::offload::scan
