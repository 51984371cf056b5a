// The one-pass kernel of scan.offload_columns, for a scanned axis outside the contiguous one:
// lines side by side across a warp's lanes, each team walking the axis of its block of lines.
#pragma once

#include "schedules/offload/scan_tiles.hpp"

namespace hk::detail::offload::scan {

// Team memory of one-pass scan.offload_columns before its ring: two sets of the warps' totals per
// group (column_group) where a team has several warps, rounded up to whole 16-byte slots.
template <class Acc> constexpr std::int64_t column_folds_bytes(int threads, int lanes, int V) {
  const std::int64_t warps = threads / 32;
  return warps > 1 ? (2 * warps * lanes * V * std::int64_t(sizeof(Acc)) + 15) / 16 * 16 : 0;
}

#ifdef __NVPTX__
// A tile of one-pass scan.offload_columns held by one lane: up to cap rows of its group (V
// adjacent lines, loaded and stored as one 16-byte vector when V > 1).
template <class T, int V, int cap> struct ColumnTile {
  T v[cap][V];

  void load(const T* base, std::int64_t offset, std::int64_t step, int count) {
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < count) {
        const T* p = base + offset + k * step;
        if constexpr (V == 1) {
          v[k][0] = *p;
        } else {
          const u32x4 w = *reinterpret_cast<const u32x4*>(p);
          __builtin_memcpy(v[k], &w, 16);
        }
      }
  }

  // Staged tiles (V > 1): the rows' 16-byte vectors copied into team memory without passing
  // through registers, row k at slot + k * row_stride (team addresses), then read back once their
  // copies are complete. Each lane reads only what it copied.
  void stage(u32 slot, u32 row_stride, const T* base, std::int64_t offset, std::int64_t step, int count) const {
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < count) copy_async_16(slot + u32(k) * row_stride, base + offset + k * step);
  }
  void read(u32 slot, u32 row_stride, int count) {
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < count) {
        const u32x4 w = load_team16(slot + u32(k) * row_stride);
        __builtin_memcpy(v[k], &w, 16);
      }
  }

  template <class Op> void fold(int count, AccOf<T> (&f)[V]) const {
#pragma unroll
    for (int j = 0; j < V; ++j) f[j] = inclusive_start<Op, AccOf<T>>();
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < count)
#pragma unroll
        for (int j = 0; j < V; ++j) f[j] = Op::apply(f[j], widen(v[k][j]));
  }

  // Replaces the rows by their scans from carries c, then stores them as load() read them.
  template <class Op>
  void scan_store(T* base, std::int64_t offset, std::int64_t step, int count, AccOf<T> (&c)[V], bool exclusive) {
#pragma unroll
    for (int k = 0; k < cap; ++k)
      if (k < count) {
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const AccOf<T> e = widen(v[k][j]);
          if (exclusive) {
            v[k][j] = narrow<T>(c[j]);
            c[j] = Op::apply(c[j], e);
          } else {
            c[j] = Op::apply(c[j], e);
            v[k][j] = narrow<T>(c[j]);
          }
        }
        T* p = base + offset + k * step;
        if constexpr (V == 1) {
          *p = v[k][0];
        } else {
          u32x4 w;
          __builtin_memcpy(&w, v[k], 16);
          store_global16_streaming(p, w);
        }
      }
  }
};

// Waits until at most `pending` (0 to 7) of this thread's copy groups are in flight.
inline void copy_async_wait_at_most(int pending) {
  switch (pending) {
    case 0: return copy_async_wait<0>();
    case 1: return copy_async_wait<1>();
    case 2: return copy_async_wait<2>();
    case 3: return copy_async_wait<3>();
    case 4: return copy_async_wait<4>();
    case 5: return copy_async_wait<5>();
    case 6: return copy_async_wait<6>();
    default: return copy_async_wait<7>();
  }
}

// The ring of staged tiles (Staged kernels): `stages` tiles of the team, each lane's rows of a tile
// in slots `threads` apart, so that a warp's row of vectors lies in consecutive 16-byte slots.
struct ColumnRing {
  u32 base = 0;        // team address of stage 0, this thread's first slot
  u32 row_stride = 0;  // between a lane's consecutive rows
  u32 stage_bytes = 0;
  int stages = 1;

  u32 slot(std::int64_t tile) const { return base + u32(tile % stages) * stage_bytes; }
};

// Where a thread of scan.offload_columns works: warp w of the team's Wp full warps (Wp
// = 1 for a team of one partial warp), lanes on each group L, groups side by side W, its row-thread
// r among the L, its lane and warp mask. Lanes of a partial warp beside full ones (in_warp false)
// hold no group and only keep the team's barriers.
struct ColumnPlace {
  int w, Wp, r, L, W;
  u32 lane, mask;
  bool in_warp;
};

// The ring of a staged kernel in team memory after the warps' totals (at folds), this thread's
// slots first.
template <class T, int V> ColumnRing column_ring(const KernelArgs<T>& a, const AccOf<T>* folds, int W) {
  const int n = omp_get_num_threads();
  ColumnRing ring;
  ring.stages = a.stages;
  ring.row_stride = u32(n) * 16;
  ring.stage_bytes = u32(a.items) * ring.row_stride;
  ring.base = team_address(folds) + u32(column_folds_bytes<AccOf<T>>(n, W, V)) + u32(omp_get_thread_num()) * 16;
  return ring;
}

// Rows [begin, end) of group g (lines g * V ...) of scan.offload_columns, from carry (a
// value per line, left at the carry past end), walked by warp w of the team's Wp warps that share
// its block, lanes that share lane % W: a team tile holds Wp x L x items rows, warp w the rows
// w * L * items ..., row-thread r of them rows r * items ... The L folds of a warp are scanned with
// shuffles (every lane of the warp takes part, those without a group too: valid false); with
// Wp > 1 each warp's totals go through team memory (two sets, used alternately, so one barrier per
// tile suffices) and every lane adds those of the warps before its own. Each row-thread then
// rescans its rows from its carry and stores them (store), or only the carry moves on. The tiles
// ahead are loaded before the current tile is combined: the next one into registers, or (Staged)
// stages - 1 of them into the ring by asynchronous copies, which hold no registers while in
// flight. Reading ahead is safe in place: each element is read, then written, by one lane only.
// Where the rows are no more than `stages` tiles, a walk leaves each tile in a slot of its own, and
// (kept, this thread's slots of the team's, `threads` apart) each tile's carry into the thread's
// rows from the walk's start: a second walk of the same rows (resident) reads the tiles there
// instead of from memory and scans them from carry combined with those, with no fold, shuffle
// or barrier (carry is then left as it came).
template <class T, class Op, int V, int Cap, bool Staged>
[[gnu::always_inline]] inline void column_group(const KernelArgs<T>& a, AccOf<T>* folds, const ColumnRing& ring,
                                                std::int64_t g, bool valid, const ColumnPlace& p, std::int64_t begin,
                                                std::int64_t end, bool store, bool resident, AccOf<T>* kept,
                                                AccOf<T> (&carry)[V]) {
  using Acc = AccOf<T>;
  const ScanLayout& s = a.s;
  const int w = p.w, Wp = p.Wp, r = p.r, L = p.L, W = p.W;
  const u32 mask = p.mask;
  std::int64_t xo = 0, yo = 0;
  if (valid) line_offsets(s, g * V, xo, yo);
  const int items = a.items, threads = omp_get_num_threads();
  const std::int64_t rows = std::int64_t(Wp) * L * items, first = (std::int64_t(w) * L + r) * items;
  const std::int64_t length = valid ? end : 0;
  ColumnTile<T, V, Cap> cur, next;
  int count = run_count(length, begin + first, items);
  if constexpr (Staged) {
    for (int t = 0; t + 1 < ring.stages && !resident; ++t) {
      const std::int64_t q = begin + t * rows + first;
      cur.stage(ring.slot(t), ring.row_stride, a.x, xo + q * s.in_step, s.in_step, run_count(length, q, items));
      copy_async_commit();
    }
  } else {
    cur.load(a.x, xo + (begin + first) * s.in_step, s.in_step, count);
  }
  const u32 group_lane = p.lane % u32(W), last_row = u32((L - 1) * W) + group_lane;
  int buf = 0;
  for (std::int64_t q = begin, tile = 0; q < end; q += rows, ++tile) {
    const int next_count = run_count(length, q + rows + first, items);
    if constexpr (Staged) {
      if (!resident) {
        const std::int64_t ahead = q + std::int64_t(ring.stages - 1) * rows + first;
        cur.stage(ring.slot(tile + ring.stages - 1), ring.row_stride, a.x, xo + ahead * s.in_step, s.in_step,
                  run_count(length, ahead, items));
        copy_async_commit();
        copy_async_wait_at_most(ring.stages - 1);
      }
      cur.read(ring.slot(tile), ring.row_stride, count);
    } else {
      next.load(a.x, xo + (q + rows + first) * s.in_step, s.in_step, next_count);
    }
    Acc c[V];
    if (resident) {
#pragma unroll
      for (int j = 0; j < V; ++j) c[j] = Op::apply(carry[j], kept[(tile * V + j) * threads]);
    } else {
      Acc before[V], total[V];
      cur.template fold<Op>(count, total);
#pragma unroll
      for (int j = 0; j < V; ++j) before[j] = inclusive_start<Op, Acc>();
      if (p.in_warp && L > 1) {
#pragma unroll
        for (int j = 0; j < V; ++j) {
          Acc inc = total[j];
          for (int d = 1; d < L; d <<= 1) {
            const Acc u = shfl_up(inc, u32(d * W), mask);
            if (r >= d) inc = Op::apply(u, inc);
          }
          const Acc up = shfl_up(inc, u32(W), mask);
          if (r > 0) before[j] = up;
          total[j] = shfl_idx(inc, last_row, mask);
        }
      }
      if (Wp > 1) {
        Acc* const set = folds + std::int64_t(buf) * Wp * W * V;
        if (p.in_warp && r == 0)
#pragma unroll
          for (int j = 0; j < V; ++j) set[(w * W + int(group_lane)) * V + j] = total[j];
#pragma omp barrier
        // Warp by warp, the V groups' totals side by side: V independent chains of Wp steps.
        if (p.in_warp) {
          Acc warps_before[V], team[V];
#pragma unroll
          for (int j = 0; j < V; ++j) warps_before[j] = team[j] = inclusive_start<Op, Acc>();
#pragma unroll 4
          for (int k = 0; k < Wp; ++k) {
            const Acc* const warp_totals = set + (k * W + int(group_lane)) * V;
#pragma unroll
            for (int j = 0; j < V; ++j) {
              if (k == w) warps_before[j] = team[j];
              team[j] = Op::apply(team[j], warp_totals[j]);
            }
          }
#pragma unroll
          for (int j = 0; j < V; ++j) {
            before[j] = Op::apply(warps_before[j], before[j]);
            total[j] = team[j];
          }
        }
        buf ^= 1;
      }
#pragma unroll
      for (int j = 0; j < V; ++j) {
        c[j] = Op::apply(carry[j], before[j]);
        carry[j] = Op::apply(carry[j], total[j]);
        if (kept) kept[(tile * V + j) * threads] = c[j];
      }
    }
    if (store) cur.template scan_store<Op>(a.y, yo + (q + first) * s.out_step, s.out_step, count, c, a.exclusive);
    if constexpr (!Staged) cur = next;
    count = next_count;
  }
}

// One-pass scan.offload_columns: the groups (lines / V of them) cut into blocks of W side by
// side, a team per block in turn. The team's full warps share the block (32 / W = L lanes on
// each group of it, lanes beyond L x W idle) and split each tile's rows; the lanes of a partial
// warp idle. A team of one partial warp (fewer than 32 threads) puts one lane on a group, its
// lanes taking the block's groups in turn, without barriers. Both cases go through one call of
// column_group: a second inlined copy of it made ptxas spill the 16-row tiles of 2-byte types.
template <class T, class Op, int V, int Cap, bool Staged>
void gpu_columns(const KernelArgs<T>& a) {
  const int n = omp_get_num_threads(), Wp = n / 32, w = omp_get_thread_num() >> 5;
  const u32 lane = lane_id(), mask = warp_mask(n);
  const std::int64_t groups = line_count(a.s) / V;
  const int W = a.lanes < 1 ? 1 : a.lanes > 32 ? 32 : a.lanes;
  const std::int64_t blocks = (groups + W - 1) / W;
  auto* folds = static_cast<AccOf<T>*>(llvm_omp_target_dynamic_shared_alloc());
  const bool full = Wp > 0, in_warp = !full || w < Wp;
  const int L = full ? 32 / W : 1, r = full ? int(lane) / W : 0;
  const ColumnPlace place{full ? w : 0, full ? Wp : 1, r, L, W, lane, mask, in_warp};
  // Full warps: lane % W is the lane's group, one pass. A partial warp: every group in turn.
  const int first = full ? int(lane) % W : int(lane), stride = full ? W : __builtin_popcount(mask);
  ColumnRing ring;
  if constexpr (Staged) ring = column_ring<T, V>(a, folds, W);
  for (std::int64_t b = omp_get_team_num(); b < blocks; b += omp_get_num_teams())
    for (int k = first; k < W; k += stride) {
      const std::int64_t g = b * W + k;
      AccOf<T> carry[V];
#pragma unroll
      for (int j = 0; j < V; ++j) carry[j] = a.start;
      column_group<T, Op, V, Cap, Staged>(a, folds, ring, g, in_warp && r < L && g < groups, place, 0, a.s.length,
                                          true, false, nullptr, carry);
    }
}
#endif

}  // namespace hk::detail::offload::scan
