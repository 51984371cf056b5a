// The rows kernel of scan.offload_rows: a team per line in turn, each line walked in tiles of threads x
// items elements, one barrier per tile.
#pragma once

#include "schedules/offload/scan_tiles.hpp"
#include "schedules/offload/scan_limits.hpp"

namespace hk::detail::offload::scan {

// A warp's buffer in team memory for a striped tile: each lane's 16-byte vectors.
inline constexpr std::int64_t transpose_warp_bytes = 32 * offload_rows_max_item_bytes;

// Team memory of the rows kernel: TileShared, then each warp's buffers, two where they fit (the
// next tile's copies land in one while the other is scanned), else one.
template <class Acc> constexpr std::int64_t rows_shared_head() { return (sizeof(TileShared<Acc>) + 15) / 16 * 16; }
template <class Acc> constexpr int rows_buffers(int threads) {
  return rows_shared_head<Acc>() + (threads + 31) / 32 * 2 * transpose_warp_bytes <= max_team_memory_bytes ? 2 : 1;
}
template <class Acc> constexpr std::int64_t rows_shared_bytes(int threads) {
  return rows_shared_head<Acc>() + (threads + 31) / 32 * rows_buffers<Acc>(threads) * transpose_warp_bytes;
}

#ifdef __NVPTX__
// The striped form of a rows tile, used when the tile lies wholly inside its line and 16-byte
// accesses are allowed: warp w holds the tile's elements from w * 32 * items on, lane-interleaved
// in 16-byte vectors (vector j of lane l at vector j * lanes + l of the warp's segment), so that
// every load and store of a warp covers lanes x 16 contiguous bytes. The vectors travel through
// the warp's buffer in team memory, where each lane then reads its run of items consecutive
// elements (vectors lane * vectors .. + vectors of the segment): one warp scan serves the tile.

// Where vector s of a warp's segment lies in its buffer (in 16-byte slots): swizzled within
// groups of eight, the 128 bytes that a quarter warp's 16-byte accesses reach at once, so that the
// striped accesses (consecutive s across the lanes) and the runs' (s = lane * vectors + j, for 1,
// 2 or 4 vectors a lane) fall in distinct banks.
inline u32 transposed_slot(std::int64_t s) { return u32(s ^ ((s >> 3) & 7)); }

// The lane's striped vectors of the tile at `segment`, copied into the warp's buffer (a team
// address) without passing through registers; completed by copy_async_wait.
template <class T>
void stage_striped(const T* segment, u32 buffer, int lanes, u32 lane, int vectors) {
  constexpr int ve = vec_elems<T>;
  for (int j = 0; j < vectors; ++j) {
    const std::int64_t s = std::int64_t(j) * lanes + lane;
    copy_async_16(buffer + 16 * transposed_slot(s), segment + s * ve);
  }
  copy_async_commit();
}

// The lane's run out of the warp's buffer, once every lane's copies are complete.
template <class T, std::int64_t MaxBytes>
void read_run(Run<T, MaxBytes>& run, u32 buffer, u32 lane, int vectors) {
  constexpr int ve = vec_elems<T>;
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      const u32x4 w = load_team16(buffer + 16 * transposed_slot(std::int64_t(lane) * vectors + j));
      __builtin_memcpy(&run.v[j * ve], &w, 16);
    }
}

// The scanned run back into the buffer, then the striped stores. Leaves the buffer free for the
// next copies into it.
template <class T, std::int64_t MaxBytes>
void store_striped(const Run<T, MaxBytes>& run, T* segment, u32 buffer, int lanes, u32 lane, int vectors, u32 mask) {
  constexpr int ve = vec_elems<T>;
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      u32x4 w;
      __builtin_memcpy(&w, &run.v[j * ve], 16);
      store_team16(buffer + 16 * transposed_slot(std::int64_t(lane) * vectors + j), w);
    }
  warp_sync(mask);
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      const std::int64_t s = std::int64_t(j) * lanes + lane;
      *reinterpret_cast<u32x4*>(segment + s * ve) = load_team16(buffer + 16 * transposed_slot(s));
    }
  warp_sync(mask);
}

// A run's folds by 16-byte vector (g) and the run's fold: short dependent chains, which
// scan_by_vectors continues.
template <class T, class Op, std::int64_t MaxBytes>
AccOf<T> fold_by_vectors(const Run<T, MaxBytes>& run, int vectors,
                         AccOf<T> (&g)[Run<T, MaxBytes>::cap / vec_elems<T>]) {
  using Acc = AccOf<T>;
  constexpr int ve = vec_elems<T>;
  Acc f = inclusive_start<Op, Acc>();
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      g[j] = widen(run.v[j * ve]);
#pragma unroll
      for (int i = 1; i < ve; ++i) g[j] = Op::apply(g[j], widen(run.v[j * ve + i]));
      f = Op::apply(f, g[j]);
    }
  return f;
}

// Replaces the run by its scan from carry c, each vector from its own start (c and the folds of
// the vectors before it).
template <class T, class Op, std::int64_t MaxBytes>
void scan_by_vectors(Run<T, MaxBytes>& run, int vectors, AccOf<T> c,
                     const AccOf<T> (&g)[Run<T, MaxBytes>::cap / vec_elems<T>], bool exclusive) {
  constexpr int ve = vec_elems<T>;
#pragma unroll
  for (int j = 0; j < Run<T, MaxBytes>::cap / ve; ++j)
    if (j < vectors) {
      AccOf<T> e = c;
      c = Op::apply(c, g[j]);
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
    }
}

// The elements of a line (from p) before its first 16-byte boundary: the line's first tile,
// after which its tiles are 16-byte aligned. Where no whole tile of `width` would follow, or 16-byte
// accesses are not allowed (vec), none of the line's tiles is aligned (line_vec false) and the
// head is 0.
template <class T>
std::int64_t line_head(const T* p, std::int64_t length, std::int64_t width, bool vec, bool& line_vec) {
  const std::int64_t h = std::int64_t((16 - reinterpret_cast<std::uintptr_t>(p) % 16) % 16 / sizeof(T));
  line_vec = vec && (h == 0 || h + width <= length);
  return line_vec ? h : 0;
}

// Whether the tile from q of a line (with its head and line_vec from line_head) is striped: past
// the head, 16-byte accesses allowed, and wholly inside the line.
inline bool striped_tile(std::int64_t q, std::int64_t head, bool line_vec, std::int64_t width, std::int64_t length) {
  return line_vec && !(q == 0 && head > 0) && q + width <= length;
}

// A team takes lines in turn and walks each in tiles of threads x items elements, after the line's
// head (line_head) where it has one: striped (above) where the tile lies inside its line and
// 16-byte accesses are allowed, else each thread's run of items consecutive elements loaded into
// registers (tile_warp_scan). A striped tile's copies are issued a tile ahead where the warp has
// two buffers (of this line or of the team's next one), so that they are in flight across the
// scan, the barrier and the stores; with one buffer, as soon as the last tile has left it. With
// ahead > 0 the tile that many beyond the next is requested into the L2. Reading ahead is safe in
// place too: the elements read ahead are written only by the warp (striped) or thread that reads
// them, later.
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
  // Striped tiles: the warp's segment, its lanes, the vectors of each lane and its buffers.
  const std::int64_t segment = std::int64_t(t & ~31) * items;
  const int lanes = n - (t & ~31) < 32 ? n - (t & ~31) : 32, vectors = items / vec_elems<T>;
  const int buffers = a.buffers;
  const u32 buffer0 = team_address(sh) + u32(rows_shared_head<Acc>() + (t >> 5) * buffers * transpose_warp_bytes);
  const std::int64_t ahead = std::int64_t(a.ahead) * width;
  std::int64_t line = omp_get_team_num();
  if (line >= lines) return;
  std::int64_t xo, yo, q = 0;
  line_offsets(s, line, xo, yo);
  bool line_vec;
  std::int64_t head = line_head(x + xo, s.length, width, vec, line_vec);
  Acc carry = a.start;
  bool striped = striped_tile(0, head, line_vec, width, s.length);
  if (striped) stage_striped(x + xo + segment, buffer0, lanes, lane, vectors);
  R run;
  int buf = 0, b = 0;
  for (;;) {
    const std::int64_t end = q == 0 && head > 0 ? head : q + width;  // of this tile
    std::int64_t next_line = line, next_q = end, next_xo = xo, next_yo = yo, next_head = head;
    bool next_vec = line_vec;
    if (next_q >= s.length) {
      next_line += teams;
      next_q = 0;
      if (next_line < lines) {
        line_offsets(s, next_line, next_xo, next_yo);
        next_head = line_head(x + next_xo, s.length, width, vec, next_vec);
      }
    }
    const bool more = next_line < lines;
    const bool next_striped = more && striped_tile(next_q, next_head, next_vec, width, s.length);
    const u32 buffer = buffer0 + u32(b * transpose_warp_bytes);
    const bool staged_ahead = next_striped && buffers == 2;
    if (staged_ahead)
      stage_striped(x + next_xo + next_q + segment, buffer0 + u32((b ^ 1) * transpose_warp_bytes), lanes, lane,
                    vectors);
    if (ahead > 0 && vec && next_q + ahead + width <= s.length) {
      const T* p = x + next_xo + next_q + ahead + segment + std::int64_t(lane) * vec_elems<T>;
      for (int j = 0; j < vectors; ++j) prefetch_l2(p + std::int64_t(j) * lanes * vec_elems<T>);
    }
    Acc warp_before, total;
    if (striped) {
      if (staged_ahead)
        copy_async_wait<1>();
      else
        copy_async_wait<0>();
      warp_sync(mask);
      read_run(run, buffer, lane, vectors);
      Acc g[R::cap / vec_elems<T>];
      const Acc fold = fold_by_vectors<T, Op>(run, vectors, g);
      const Acc lane_before = warp_scan_folds<Op>(fold, sh->warp_total[buf], lane, mask);
#pragma omp barrier
      tile_block_scan<Op>(sh->warp_total[buf], n, lane, mask, warp_before, total);
      scan_by_vectors<T, Op>(run, vectors, Op::apply(Op::apply(carry, warp_before), lane_before), g, exclusive);
      store_striped(run, y + yo + q + segment, buffer, lanes, lane, vectors, mask);
    } else {
      const int count = run_count(end < s.length ? end : s.length, q + first, items);
      run.load(x + xo + (q + first) * s.in_step, s.in_step, count, line_vec && count == items);
      const Acc lane_before = tile_warp_scan<T, Op>(run, count, sh->warp_total[buf], lane, mask);
#pragma omp barrier
      tile_block_scan<Op>(sh->warp_total[buf], n, lane, mask, warp_before, total);
      run.template scan_store<Op>(y + yo + (q + first) * s.out_step, s.out_step, count,
                                  line_vec && count == items, Op::apply(Op::apply(carry, warp_before), lane_before),
                                  exclusive);
    }
    buf ^= 1;
    if (!more) break;
    if (next_striped && buffers == 1) stage_striped(x + next_xo + next_q + segment, buffer0, lanes, lane, vectors);
    if (buffers == 2) b ^= 1;
    carry = next_line == line ? Op::apply(carry, total) : a.start;
    striped = next_striped;
    head = next_head;
    line_vec = next_vec;
    line = next_line;
    q = next_q;
    xo = next_xo;
    yo = next_yo;
  }
}
#endif

}  // namespace hk::detail::offload::scan
