// The wgmma product kernel in teams of two warpgroups, each team two vertically adjacent 128 x 128
// tiles: both warpgroups multiply by the same staged slice of B', so that a team reads 24 KB of
// operands per 64-deep slice for 256 x 128 outputs, where two one-warpgroup teams read 32 KB (the
// L2's reads per product fall by a quarter). Its stages need more than 48 KB of team memory (the
// launch shim: cuda_team_memory_limit), and one such team fills an SM's registers.
#pragma once

#include <omp.h>

#include "schedules/offload/qmm_wgmma_kernel.hpp"

namespace hk::detail::offload::qmm {

inline constexpr int pair_team_threads = 2 * wgmma_team_threads;
// A stage: 256 lines of A' (the two tiles' rows), then 128 of B'.
inline constexpr int pair_stage_lines = 3 * int(tile_rows);
template <int Stages> inline constexpr int wgmma_pair_memory_bytes = wgmma_alignment + wgmma_slice * pair_stage_lines * Stages;

// The pairs of tiles: tile rows 2p and 2p + 1 of a column of tiles (the second past the matrix
// when it has an odd number of tile rows), in the teams' order of Kernel::place with bands of
// band_rows / 2 pairs, column by column within a band.
inline i64 tile_pairs(const Kernel& k) { return k.batches * ((k.tiles_m + 1) / 2) * k.tiles_n; }
inline Kernel::Place pair_place(const Kernel& k, i64 pair) {
  const i64 pairs_m = (k.tiles_m + 1) / 2, per_batch = pairs_m * k.tiles_n;
  const i64 t = pair / per_batch, in_batch = pair % per_batch, band_pairs = k.band_rows / 2;
  const i64 band = in_batch / (band_pairs * k.tiles_n), first = band * band_pairs, left = pairs_m - first;
  const i64 height = left < band_pairs ? left : band_pairs, in_band = in_batch - first * k.tiles_n;
  return {t, band, (first + in_band % height) * 2 * tile_rows, (in_band / height) * tile_cols};
}

#ifdef __NVPTX__
// A pair's staging: thread tid copies chunk tid % 4 of lines tid / 4 + 64 r, r = 0 .. 5, of a
// stage (A' lines of the first tile, of the second, B' lines), whose swizzle repeats every 8 lines,
// so that every copy of the thread lands at its first one's offset plus 64 r lines.
struct PairStaging {
  static constexpr int stage_lines = pair_stage_lines;
  const u8* a;       // the thread's first A' chunk at depth 0
  const u8* b;       // and B' chunk
  i64 begin, end;    // the whole depth
  i64 step;          // bytes from one of its lines to the next: 64 lines
  i64 second;        // from a line of the first tile's A' rows to the second's (0 past A': the
                     // first's rows again, whose products are never stored)
  u32 to;            // its first copy's offset in a stage

  template <int Slice> void request(i64 k0, u32 stage) const {
    const u8 *x = a + k0, *y = b + k0;
    copy_async_16(stage + to, x);
    copy_async_16(stage + to + 64 * Slice, x + step);
    copy_async_16(stage + to + 128 * Slice, x + second);
    copy_async_16(stage + to + 192 * Slice, x + second + step);
    copy_async_16(stage + to + 256 * Slice, y);
    copy_async_16(stage + to + 320 * Slice, y + step);
    copy_async_commit();
  }
};

template <int Slice> inline PairStaging pair_staging(const Kernel& k, const Kernel::Place& at, int tid) {
  constexpr int chunks = Slice / 16;
  const int line = tid / chunks, c = tid % chunks;
  const i64 apart = pair_team_threads / chunks;
  const u8* b = reinterpret_cast<const u8*>(k.b_cols(at.t, at.j0));
  return {k.a_rows(at.t, at.i0) + line * k.kp + 16 * c, b + line * k.kp + 16 * c, 0, k.kp, apart * k.kp,
          at.i0 + tile_rows < k.Mp ? tile_rows * k.kp : 0, u32(swizzled<Slice>(line, c))};
}

// A team's pair: warpgroup w multiplies tile w's two halves of 64 rows by the shared 128 columns
// (as tile_wgmma, with one slice's products in flight across each barrier), then each warpgroup
// finishes its tile through its own half of the team memory. Inlined and free of conditions
// around the products, for the reasons tile_wgmma gives.
template <int Stages>
[[gnu::always_inline]] inline void pair_wgmma(const Kernel& k, const Kernel::Place& at, u8* memory, int tid) {
  constexpr int Slice = wgmma_slice, Ahead = Stages - 2;
  static_assert(Stages >= 3 && 2 * wgmma_epilogue_bytes <= wgmma_slice * pair_stage_lines * Stages);
  const int w = tid / wgmma_team_threads;
  const u32 shared = team_address(memory);
  const PairStaging source = pair_staging<Slice>(k, at, tid);
  const u32 a_lines = u32(w * tile_rows * Slice), b_lines = u32(2 * tile_rows * Slice);
  i32 d[2][64] = {};
  first_slices<Slice, Stages, Ahead>(source, shared);
  for (i64 k0 = 0, s = 0; k0 < source.end; k0 += Slice, ++s) {
    slice_copied<Ahead>();
    fence_proxy_async();
    wgmma_wait<1>();
    const u32 stage = refill<Slice, Stages, Ahead>(source, k0, s, shared);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < Slice / 32; ++ks)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wgmma_m64n128k32(d[h], wgmma_descriptor<Slice>(stage + a_lines + u32(64 * h * Slice) + 32 * ks),
                         wgmma_descriptor<Slice>(stage + b_lines + 32 * ks));
    wgmma_commit();
  }
  wgmma_wait_all();
  wgmma_hold(d[0]);
  wgmma_hold(d[1]);
  finish_wgmma_tile(k, at.t, at.i0 + w * tile_rows, at.j0, d, memory + w * wgmma_epilogue_bytes,
                    tid % wgmma_team_threads);
}
#endif

// The body of the pair kernel: teams take pairs in turn. Only whole tiles, with every operand
// there and nobody waiting for bands (launch_mma's conditions); the host fallback, and a team
// without its memory or threads, multiplies both tiles in 64 x 32 blocks thread by thread.
template <int Stages> [[gnu::always_inline]] inline void product_team_pairs(const Kernel& k) {
  const i64 pairs = tile_pairs(k), team = omp_get_team_num(), team_count = omp_get_num_teams();
  const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
#ifdef __NVPTX__
  u8* memory = static_cast<u8*>(llvm_omp_target_dynamic_shared_alloc());
  if (memory) memory += (wgmma_alignment - team_address(memory) % wgmma_alignment) % wgmma_alignment;
  const bool staged = memory && nth == pair_team_threads;
#endif
  for (i64 index = team; index < pairs; index += team_count) {
    const Kernel::Place at = pair_place(k, index);
#ifdef __NVPTX__
    if (staged) {
      pair_wgmma<Stages>(k, at, memory, tid);
      continue;
    }
#endif
    for (int b = tid; b < 16; b += nth) {
      const Kernel::Item w{{at.t, at.band, at.i0 + (b / 8) * tile_rows, at.j0}, 0, 1, nullptr};
      if (w.at.i0 < k.M) block_scalar<false>(k, w, w.at.i0 + (b % 8 / 4) * 64, at.j0 + (b % 4) * 32);
    }
  }
}

}  // namespace hk::detail::offload::qmm
