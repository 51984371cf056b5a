// The line sums that the warp-specialized wgmma kernel works out itself, in place of a packing
// launch, for operands read in place (Kernel::rows_in_product, cols_in_product): row sums of A',
// column sums of B', a tile of 128 lines at a time. Each line tile has a state word in the
// workspace (Kernel::line_tile_states) that teams claim before summing it; a team sums the tiles
// it prefers as it starts, and a tile's epilogue that finds its sums missing claims and sums them
// itself or waits for their claimer, which is running (only running teams claim): no team waits
// for one that may not have started. Lines still arriving (Kernel::a_ready, b_ready) are summed
// once they are there.
#pragma once

#include <cstdint>

#include "schedules/offload/qmm_kernel.hpp"

namespace hk::detail::offload::qmm {

// A state: the call's epoch above two bits of nobody (0), being summed (1), summed (2); a
// word of an earlier epoch counts as nobody.
inline constexpr std::uint64_t line_tile_claimed = 1, line_tile_summed = 2;

// Line tiles: A's row tiles of every A matrix, then B's column tiles of every B matrix.
inline i64 row_line_tiles(const Kernel& k) { return k.rows_in_product ? (k.a_shared ? 1 : k.batches) * k.tiles_m : 0; }
inline i64 line_tiles(const Kernel& k) {
  return row_line_tiles(k) + (k.cols_in_product ? (k.b_shared ? 1 : k.batches) * k.tiles_n : 0);
}

#ifdef __NVPTX__
inline bool line_tile_summed_now(const Kernel& k, std::uint64_t epoch, i64 tile) {
  return load_relaxed(k.line_tile_states + tile) == (epoch << 2 | line_tile_summed);
}

// True where the caller is to sum line tile `tile`: nobody had claimed it in this call.
inline bool claim_line_tile(const Kernel& k, std::uint64_t epoch, i64 tile) {
  std::uint64_t* state = k.line_tile_states + tile;
  std::uint64_t seen = 0;
  while (seen >> 2 != epoch)
    if (__atomic_compare_exchange_n(state, &seen, epoch << 2 | line_tile_claimed, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return true;
  return false;
}

// The arrival flag of line tile `tile` (Kernel::a_ready, b_ready; null where its operand was all
// there at the start) and its index there.
struct LineTileArrival {
  const i32* ready;
  i64 index;
};
inline LineTileArrival line_tile_arrival(const Kernel& k, i64 tile) {
  const bool is_a = tile < row_line_tiles(k);
  const i64 index = is_a ? tile : tile - row_line_tiles(k);
  return {is_a ? k.a_ready : k.b_ready, index % (is_a ? k.tiles_m : k.tiles_n)};
}

// Sums line tile `tile` (claimed by the caller) with threads tid of nth, joined by `sync`, a warp
// a line, once its lines have arrived, and marks it summed once every sum is stored.
template <class Sync>
inline void sum_line_tile(const Kernel& k, std::uint64_t epoch, i64 tile, int tid, int nth, Sync sync) {
  const bool is_a = tile < row_line_tiles(k);
  const i64 index = is_a ? tile : tile - row_line_tiles(k), per_matrix = is_a ? k.tiles_m : k.tiles_n;
  const i64 matrix = index / per_matrix, first = index % per_matrix * (is_a ? tile_rows : tile_cols);
  const LineTileArrival arrival = line_tile_arrival(k, tile);
  await_ready(arrival.ready, arrival.index);
  const i64 lines = is_a ? k.M : k.N, count = lines - first < 128 ? lines - first : 128;
  const u8* data = is_a ? k.ap + (matrix * k.a_lines + first) * k.kp
                        : reinterpret_cast<const u8*>(k.bp) + (matrix * k.b_lines + first) * k.kp;
  i64* sums = (is_a ? k.row_sums : k.col_sums) + matrix * lines + first;
  const int lane = tid % 32, warps = nth / 32;
  const i64 chunks = k.kp / 16;
  for (i64 l = tid / 32; l < count; l += warps) {
    const u32x4* line = reinterpret_cast<const u32x4*>(data + l * k.kp);
    i32 part = 0;  // a lane's at most 2048 bytes
    // Loads in flight a lane: a team sums a tile alone, so they set its pace; sixteen (two lines
    // at once) spilled the consumers' registers.
    constexpr int in_flight = 8;
    for (i64 c0 = lane; c0 < chunks; c0 += in_flight * 32) {
      u32x4 w[in_flight];
#pragma unroll
      for (int u = 0; u < in_flight; ++u) w[u] = c0 + 32 * u < chunks ? line[c0 + 32 * u] : u32x4{0, 0, 0, 0};
#pragma unroll
      for (int u = 0; u < in_flight; ++u)
        part += byte_sum(w[u].x, is_a) + byte_sum(w[u].y, is_a) + byte_sum(w[u].z, is_a) + byte_sum(w[u].w, is_a);
    }
    const i64 sum = warp_sum(part);
    if (lane == 0) sums[l] = sum;
  }
  fence_device();
  sync();
  if (tid == 0) __atomic_exchange_n(k.line_tile_states + tile, epoch << 2 | line_tile_summed, __ATOMIC_RELAXED);
}

// The line tiles whose sums work item w's terms read (-1: none), and whether both are summed.
inline void line_tiles_of(const Kernel& k, const Kernel::Item& w, i64 (&tiles)[2]) {
  tiles[0] = k.rows_in_product ? k.a_batch(w.at.t) * k.tiles_m + w.at.i0 / tile_rows : -1;
  tiles[1] = k.cols_in_product ? row_line_tiles(k) + k.b_batch(w.at.t) * k.tiles_n + w.at.j0 / tile_cols : -1;
}
inline bool line_tiles_summed_now(const Kernel& k, std::uint64_t epoch, const i64 (&tiles)[2]) {
  return (tiles[0] < 0 || line_tile_summed_now(k, epoch, tiles[0])) &&
         (tiles[1] < 0 || line_tile_summed_now(k, epoch, tiles[1]));
}

// At a team's start, every thread of it: the line tiles it prefers (the last teams prefer the
// first tiles, since they take fewer work items), each summed where it has arrived and nobody has
// claimed it yet (one still arriving is left to the first tile that needs it, whose operands the
// team then waits for anyway). `word`: a team-memory word through which the first thread tells
// the others what it claimed.
inline void sum_preferred_line_tiles(const Kernel& k, std::uint64_t epoch, volatile u32* word, int tid, int nth) {
  const i64 team = omp_get_team_num(), teams = omp_get_num_teams(), tiles = line_tiles(k);
  for (i64 tile = teams - 1 - team; tile < tiles; tile += teams) {
    const LineTileArrival arrival = line_tile_arrival(k, tile);
    if (tid == 0) *word = arrived_now(arrival.ready, arrival.index) && claim_line_tile(k, epoch, tile);
    team_barrier();
    const bool mine = *word != 0;
    team_barrier();
    if (mine) sum_line_tile(k, epoch, tile, tid, nth, team_barrier);
  }
}

// Beside the product, from a team's start, by threads tid of nth joined by `sync` (none of which
// the product waits for): where B' is still arriving, the column tiles the team prefers, each
// claimed once it is there and summed unless another team claimed it first: left to the tiles that
// need them, they held a spread call's other devices back (each summed by one team while the others
// of its column wait, most likely). Rows of A still arriving stay with their tiles: summing them
// here too, with fewer threads than a tile's consumers, made host-tensor calls slower (docs/gpu.md).
// `word`: a team-memory word through which tid 0 tells the others.
template <class Sync>
inline void sum_arriving_column_tiles(const Kernel& k, std::uint64_t epoch, volatile u32* word, int tid, int nth,
                                      Sync sync) {
  if (!k.b_ready || !k.cols_in_product) return;
  const i64 team = omp_get_team_num(), teams = omp_get_num_teams(), first = row_line_tiles(k), tiles = line_tiles(k);
  for (i64 tile = first + teams - 1 - team; tile < tiles; tile += teams) {
    if (tid == 0) {
      const LineTileArrival arrival = line_tile_arrival(k, tile);
      await_ready(arrival.ready, arrival.index);
      *word = claim_line_tile(k, epoch, tile);
    }
    sync();
    const bool mine = *word != 0;
    sync();
    if (mine) sum_line_tile(k, epoch, tile, tid, nth, sync);
  }
}

// Before a tile's terms are gathered, by the threads that gather them (tid of nth, joined by
// `sync`): line tile `tile` summed, by these threads if nobody has claimed it, else by waiting
// for its claimer; then their reads of the sums ordered after it.
template <class Sync>
inline void await_line_tile(const Kernel& k, std::uint64_t epoch, i64 tile, volatile u32* word, int tid, int nth,
                            Sync sync) {
  for (;;) {
    if (tid == 0) *word = line_tile_summed_now(k, epoch, tile) ? 2 : claim_line_tile(k, epoch, tile) ? 1 : 0;
    sync();
    const u32 what = *word;
    sync();
    if (what == 2) break;
    if (what == 1) {
      sum_line_tile(k, epoch, tile, tid, nth, sync);
      break;
    }
    asm volatile("nanosleep.u32 500;");
  }
  fence_device();
}
#endif

}  // namespace hk::detail::offload::qmm
