// The warp-specialized wgmma product kernel of qmm.offload_mma on sm_90 GPUs, for teams granted more
// than 48 KB of team memory: a producer warpgroup whose one thread loads each depth slice of a tile
// (128 rows of A', 128 columns of B') with the tensor memory accelerator, and two consumer
// warpgroups, each multiplying 64 of the tile's rows by its 128 columns with wgmma.mma_async
// m64n128k32 straight from team memory. Stages hand over through transaction barriers (full: the
// slice has arrived; empty: both consumers' products have read it), never a team barrier, so the
// producer runs up to Stages slices ahead, across tiles too: the next tile's first slices arrive
// while the consumers finish the last one. Teams are persistent, taking work items in turn. Where
// the zero points need the sums of an operand read in place, the teams sum its lines themselves
// (qmm_line_sums.hpp): at their start, and, where B' is still arriving, in the producer
// warpgroup's three idle warps as each tile of its columns arrives. Where every zero point of A'
// is 128 (Centred), the consumers load their A' from team memory into registers, flip its bytes
// and multiply A' - 128 as signed bytes, so that B's column sums are not needed at all.
#pragma once

#include <cstdint>
#include <type_traits>

#include "schedules/offload/qmm_four_outputs.hpp"
#include "schedules/offload/qmm_line_sums.hpp"
#include "schedules/offload/qmm_product.hpp"
#include "schedules/offload/qmm_wgmma_kernel.hpp"

namespace hk::detail::offload::qmm {

inline constexpr int tma_team_threads = 3 * wgmma_team_threads;
inline constexpr int tma_consumer_threads = 2 * wgmma_team_threads;
inline constexpr int tma_consumer_warps = tma_consumer_threads / 32;

// Team memory, from an address aligned to the 128-byte swizzle's period: the stages (A' lines then B'
// lines, Slice bytes each), the tile's terms, each consumer warp's staged 16 x 64 accumulators,
// the full and empty barriers of each stage, then two words.
template <int Slice, int Stages> struct TmaLayout {
  static constexpr int stage_bytes = 2 * int(tile_rows) * Slice;
  static constexpr int terms = Stages * stage_bytes;
  static constexpr int staged = terms + (tile_terms_bytes + 15) / 16 * 16;
  static constexpr int barriers = staged + tma_consumer_warps * 16 * wgmma_epilogue_pitch * int(sizeof(i32));
  // Three words through which one thread tells the others (the team's, the consumers', the
  // producer warpgroup's summing warps').
  static constexpr int words = barriers + 2 * Stages * 8;
  static constexpr int bytes = words + 12;
  // Stage s's barriers: full once its copy has arrived, empty once its products are done.
  static constexpr u32 full(u32 shared, u32 s) { return shared + barriers + 8 * s; }
  static constexpr u32 empty(u32 shared, u32 s) { return shared + barriers + 8 * (Stages + s); }
};
inline constexpr int tma_alignment = 1024;
template <int Slice, int Stages> inline constexpr int tma_memory_bytes = tma_alignment + TmaLayout<Slice, Stages>::bytes;

#ifdef __NVPTX__
// The producer: one thread requests every slice of every item of the team, in the consumers' order,
// each into the next stage once both consumers have released it.
template <int Slice, int Stages> [[gnu::always_inline]] inline void tma_produce(const Kernel& k, u32 shared) {
  using L = TmaLayout<Slice, Stages>;
  const u8* maps = static_cast<const u8*>(k.tensor_maps);
  fence_tensor_map(maps);
  fence_tensor_map(maps + tensor_map_bytes);
  u32 n = 0;
  for (i64 index = omp_get_team_num(); index < k.items(); index += omp_get_num_teams()) {
    const Kernel::Item w = k.item(index);
    await_ready(k.a_ready, w.at.i0 / tile_rows);
    await_ready(k.b_ready, w.at.j0 / tile_cols);
    const int a_line = int(k.a_batch(w.at.t) * k.a_lines + w.at.i0);
    const int b_line = int(k.b_batch(w.at.t) * k.b_lines + w.at.j0);
    const i64 end = k.depth_begin(w.part + 1, w.parts, Slice);
    for (i64 k0 = k.depth_begin(w.part, w.parts, Slice); k0 < end; k0 += Slice, ++n) {
      const u32 stage = n % Stages, full = L::full(shared, stage);
      mbarrier_wait(L::empty(shared, stage), (n / Stages + 1) & 1);
      mbarrier_arrive_expect_tx(full, L::stage_bytes);
      const u32 to = shared + stage * L::stage_bytes;
      tensor_load_2d(to, maps, full, int(k0), a_line);
      tensor_load_2d(to + u32(tile_rows * Slice), maps + tensor_map_bytes, full, int(k0), b_line);
    }
  }
}

// What a consumer that multiplies A' as it is keeps of the centred path's registers: nothing.
struct Uncentred {};

// Consumer `half` (0 or 1): rows 64 half .. + 63 of each tile, its warp w rows 16 w .. + 15 of them
// (lanes 4g + q: columns 8j + 2q, + 1 of rows g and g + 8, as mma.sync's m16n8 blocks), finished as
// the one-warpgroup kernel finishes them (tile_wgmma). ctid: the thread among the consumers.
// Centred: A' - 128 from registers (ldmatrix, then its bytes flipped), in two sets taken by turns,
// since a set is read until its products are done, one slice after it was loaded.
template <int Slice, int Stages, bool Centred>
[[gnu::always_inline]] inline void tma_consume(const Kernel& k, std::uint64_t epoch, u8* memory, u32 shared, int half,
                                               int ctid) {
  using L = TmaLayout<Slice, Stages>;
  constexpr u32 consumers = 1;  // named barrier of the two consumer warpgroups
  Kernel::Row* rows = reinterpret_cast<Kernel::Row*>(memory + L::terms);
  Kernel::Col* cols = reinterpret_cast<Kernel::Col*>(rows + tile_rows);
  const int warp = ctid / 32 % 4, lane = ctid % 32;
  // Centred: the lane's ldmatrix addresses in the consumer's 64 lines of A' of a stage, per 32 of
  // the depth (rows lane % 16 of the warp's 16, bytes 16 * (lane / 16) of the 32), as tile_mma's.
  struct CentredAddresses {
    u32 at[Slice / 32];
  };
  [[maybe_unused]] std::conditional_t<Centred, CentredAddresses, Uncentred> a_at;
  if constexpr (Centred)
#pragma unroll
    for (int ks = 0; ks < Slice / 32; ++ks)
      a_at.at[ks] = u32(swizzled<Slice>(16 * warp + lane % 16, 2 * ks + lane / 16));
  i32* staged = reinterpret_cast<i32*>(memory + L::staged) + (ctid / 32) * 16 * wgmma_epilogue_pitch;
  const EpilogueScalars scalars = epilogue_scalars<false>(k);
  const auto consumers_sync = [] { named_barrier(consumers, tma_consumer_threads); };
  volatile u32* word = reinterpret_cast<volatile u32*>(memory + L::words) + 1;
  u32 n = 0;
  for (i64 index = omp_get_team_num(); index < k.items(); index += omp_get_num_teams()) {
    const Kernel::Item w = k.item(index);
    const i64 t = w.at.t, i0 = w.at.i0, j0 = w.at.j0;
    if (w.partial && ctid == 0) split_part_started(k, epoch, w);
    named_barrier(consumers, tma_consumer_threads);  // the last tile's epilogue is done with the terms
    // Where the kernel sums lines itself, the terms are gathered now if their sums are there, else
    // after the products, once they are.
    i64 sums_from[2] = {-1, -1};
    bool summed = true;
    if (k.line_tile_states) {
      line_tiles_of(k, w, sums_from);
      if (ctid == 0) *word = line_tiles_summed_now(k, epoch, sums_from);
      consumers_sync();
      summed = *word != 0;
      consumers_sync();
      if (summed) fence_device();
    }
    if (summed) gather_terms(k, t, i0, j0, rows, cols, ctid, tma_consumer_threads);
    i32 d[64] = {};
    const i64 begin = k.depth_begin(w.part, w.parts, Slice), end = k.depth_begin(w.part + 1, w.parts, Slice);
    // Centred: two sets of A' words, taken by turns (`set`).
    struct CentredWords {
      u32 words[2][Slice / 32][4];
    };
    [[maybe_unused]] std::conditional_t<Centred, CentredWords, Uncentred> a_words;
    const auto multiply = [&](i64 k0, [[maybe_unused]] int set) __attribute__((always_inline)) {
      const u32 stage = n % Stages;
      const u32 a = shared + stage * L::stage_bytes + u32(64 * half * Slice);
      const u32 b = shared + stage * L::stage_bytes + u32(tile_rows * Slice);
      mbarrier_wait(L::full(shared, stage), (n / Stages) & 1);
      if constexpr (Centred) {
#pragma unroll
        for (int ks = 0; ks < Slice / 32; ++ks) {
          ldmatrix_x4(a_words.words[set][ks], a + a_at.at[ks]);
#pragma unroll
          for (int r = 0; r < 4; ++r) a_words.words[set][ks][r] ^= 0x80808080u;
        }
      }
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < Slice / 32; ++ks)
        if constexpr (Centred)
          wgmma_m64n128k32_centred(d, a_words.words[set][ks], wgmma_descriptor<Slice>(b + 32 * ks));
        else
          wgmma_m64n128k32(d, wgmma_descriptor<Slice>(a + 32 * ks), wgmma_descriptor<Slice>(b + 32 * ks));
      wgmma_commit();
      // The products of the slice before are done: its stage (and its set of A' words) is free.
      wgmma_wait<1>();
      mbarrier_arrive_if(L::empty(shared, (n + Stages - 1) % Stages), k0 != begin && lane == 0);
      ++n;
    };
    for (i64 k0 = begin; k0 < end;) {
      multiply(k0, 0);
      k0 += Slice;
      if constexpr (Centred) {
        if (k0 >= end) break;
        multiply(k0, 1);
        k0 += Slice;
      }
    }
    wgmma_wait_all();
    wgmma_hold(d);
    // And the last slice's (a part may have none).
    mbarrier_arrive_if(L::empty(shared, (n + Stages - 1) % Stages), end != begin && lane == 0);
    if (!summed) {
      for (const i64 tile : sums_from)
        if (tile >= 0) await_line_tile(k, epoch, tile, word, ctid, tma_consumer_threads, consumers_sync);
      gather_terms(k, t, i0, j0, rows, cols, ctid, tma_consumer_threads);
    }
    if (w.partial) {
      store_partial_rows(k, w, d, half, warp, lane);
      split_part_done(k, epoch, w, rows, cols, true, k.team_last + omp_get_team_num(),
                      index + omp_get_num_teams() >= k.items(), ctid, tma_consumer_threads, consumers_sync);
      continue;
    }
    named_barrier(consumers, tma_consumer_threads);  // the terms are gathered
    finish_rows(d, half, warp, lane, staged, rows, cols, scalars);
    if (k.bands_done) count_tile_done(k.band_count(w.at), ctid, consumers_sync);
  }
}
#endif

// The body of the kernel (SPMD, tma_team_threads a team). Warpgroup 0 produces, 1 and 2 consume;
// the role is read through a shuffle so that ptxas sees it uniform across each warp. Centred:
// every zero point of A' is 128 (Kernel::a_centred).
template <int Slice, int Stages, bool Centred>
[[gnu::always_inline]] inline void product_team_tma(const Kernel& k, std::uint64_t epoch) {
#ifdef __NVPTX__
  u8* memory = static_cast<u8*>(llvm_omp_target_dynamic_shared_alloc());
  memory += (tma_alignment - team_address(memory) % tma_alignment) % tma_alignment;
  const u32 shared = team_address(memory);
  const int tid = omp_get_thread_num();
  if (tid == 0) {
    for (u32 s = 0; s < Stages; ++s) {
      mbarrier_init(TmaLayout<Slice, Stages>::full(shared, s), 1);
      mbarrier_init(TmaLayout<Slice, Stages>::empty(shared, s), tma_consumer_warps);
    }
    fence_mbarrier_init();
  }
  team_barrier();
  if (k.line_tile_states)
    sum_preferred_line_tiles(k, epoch, reinterpret_cast<volatile u32*>(memory + TmaLayout<Slice, Stages>::words), tid,
                             tma_team_threads);
  const int role = int(shfl_idx_b32(u32(tid / wgmma_team_threads), 0, ~0u));
  // Centred consumers hold two sets of A' words beside their accumulators: the producer warpgroup,
  // whose one copying thread is all it runs then (a centred call needs no column sums), gives
  // them registers (ptxas: 36 bytes of spills left, where 168 registers each spilled 204).
  constexpr int producer_registers = 56, consumer_registers = 224;
  static_assert(wgmma_team_threads * (producer_registers + 2 * consumer_registers) <= 65536);
  if (role == 0) {
    if constexpr (Centred) registers_lower_to<producer_registers>();
    // One thread produces; the producer warpgroup's other warps sum B' columns as they arrive.
    constexpr u32 summing = 2;  // named barrier of those warps
    constexpr int summing_threads = wgmma_team_threads - 32;
    if (tid == 0)
      tma_produce<Slice, Stages>(k, shared);
    else if (tid >= 32)
      sum_arriving_column_tiles(k, epoch, reinterpret_cast<volatile u32*>(memory + TmaLayout<Slice, Stages>::words) + 2,
                                tid - 32, summing_threads, [] { named_barrier(summing, summing_threads); });
  } else {
    if constexpr (Centred) registers_raise_to<consumer_registers>();
    tma_consume<Slice, Stages, Centred>(k, epoch, memory, shared, role - 1, tid - wgmma_team_threads);
  }
#else
  (void)k;
  (void)epoch;
#endif
}

}  // namespace hk::detail::offload::qmm
