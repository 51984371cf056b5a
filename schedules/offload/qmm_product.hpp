// What both product kernels of the offload QuantizedLinearMatMul share: their team memory, the
// staging of a tile's depth slices into it by asynchronous copies, the walk of a team over its
// tiles, and the scalar body of the host fallback.
#pragma once

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "schedules/offload/qmm_four_outputs.hpp"
#include "schedules/offload/qmm_kernel.hpp"

namespace hk::detail::offload::qmm {

// Team memory of the staged kernels: Stages stages, each a Slice-deep slice of the tile's 128 rows
// of A' then of its 128 columns of B', Slice bytes per line. Chunk c (16 bytes) of line r lies at
// chunk c ^ ((r / (8 / chunks)) % chunks) of the line, so that eight consecutive lines' chunk c fall
// in eight distinct 16-byte bank groups (ldmatrix phases, 16-byte loads and the copies' stores are
// all conflict-free). Slices 64 deep in two stages: fastest for both kernels within 48 KB
// (docs/gpu-measurements.md, matmul dp4a and mma); the tensor-core kernels take up to
// max_tensor_stages where the GPU grants more team memory (cuda_team_memory_limit).
inline constexpr int mma_slice = 64, mma_stages = 2;
inline constexpr int dp4a_slice = 64, dp4a_stages = 2;
inline constexpr int max_tensor_stages = 4;
static_assert(mma_slice == dp4a_slice, "evenly_staged serves both kernels");

// The team sizes whose threads split a slice's copies evenly in whole swizzle periods (Staging):
// multiples of 8 * chunks dividing 128 * chunks, with 64-deep slices 32, 64, 128, 256 and 512.
constexpr bool evenly_staged(int nth) {
  constexpr int chunks = dp4a_slice / 16;
  return nth > 0 && nth % (8 * chunks) == 0 && int(tile_rows) * chunks % nth == 0;
}
// The mma kernel's team memory: the stages, which its epilogue reuses to stage up to four warps'
// 16 x 64 accumulators (int64 at most), then the tile's row and column terms, gathered as the tile
// starts, then the word through which split-K's hand-over tells the team what its first thread
// counted. The dp4a epilogue holds a tile's row and column terms where its stages were.
inline constexpr int tile_terms_bytes = int(tile_rows * sizeof(Kernel::Row) + tile_cols * sizeof(Kernel::Col));
inline constexpr int split_word_bytes = 16;
template <int Stages> inline constexpr int mma_stage_bytes = std::max(mma_slice * 256 * Stages, 4 * 16 * 64 * 8);
template <int Stages>
inline constexpr int mma_memory_bytes = mma_stage_bytes<Stages> + tile_terms_bytes + split_word_bytes;
inline constexpr int dp4a_memory_bytes = std::max(dp4a_slice * 256 * dp4a_stages, tile_terms_bytes);
// The wgmma kernel's: its stages, which after a tile's last slice hold its terms, then the
// epilogue's staged blocks, from an address aligned to the swizzle's period within the block: the
// hardware swizzles by absolute team address bits, which match the staging's swizzle only from a
// multiple of it. Two stages fit 48 KB (a third does not: the runtime keeps about 1 KB of it).
inline constexpr int wgmma_slice = 64, wgmma_stages = 2;
inline constexpr int wgmma_alignment = 8 * wgmma_slice;
template <int Stages> inline constexpr int wgmma_stage_bytes = wgmma_slice * 256 * Stages;
template <int Stages> inline constexpr int wgmma_memory_bytes = wgmma_alignment + wgmma_stage_bytes<Stages>;
static_assert(mma_memory_bytes<mma_stages> <= max_team_memory_bytes && dp4a_memory_bytes <= max_team_memory_bytes &&
                  wgmma_memory_bytes<wgmma_stages> <= max_team_memory_bytes,
              "a team gets at most 48 KB of team memory without opting in, the runtime's share included");

// The product kernels' families: dp4a, tensor cores through mma.sync (sm_80 and newer) or through
// warpgroup MMA (wgmma, sm_90a), whose teams are one warpgroup.
enum class Family { dp4a, mma, wgmma };
inline constexpr int wgmma_team_threads = 128;

// The threads of a team the staged kernels take for a request (0: default_threads): the largest
// count not above it, nor above the launch bound, that the staging splits evenly (the schedule
// allows 32 to 1024).
inline int staged_team_threads(int requested, int default_threads, int bound) {
  int threads = std::min(requested > 0 ? requested : default_threads, bound);
  while (threads > 32 && !evenly_staged(threads)) --threads;
  return std::max(threads, 32);
}

// Calls launch(std::bool_constant<Deep>) with Deep: whether the depth spans more than one int32
// slice (the kernels then add the slices in int64).
template <class F> void with_depth(const Kernel& k, F&& launch) {
  if (k.kp > int32_depth)
    launch(std::true_type{});
  else
    launch(std::false_type{});
}

// The epilogue's terms of the tile at (i0, j0) of matrix t, a row or column per thread of the team,
// into rows (tile_rows) and cols (tile_cols) in team memory.
[[gnu::always_inline]] inline void gather_terms(const Kernel& k, i64 t, i64 i0, i64 j0, Kernel::Row* rows, Kernel::Col* cols,
                                               int tid, int nth) {
  const Kernel::Tile tl = k.tile(t);
  for (int e = tid; e < int(tile_rows + tile_cols); e += nth)
    if (e < int(tile_rows))
      rows[e] = k.row(tl, i0 + e);
    else
      cols[e - int(tile_rows)] = k.col(tl, j0 + e - tile_rows);
}

#ifdef __NVPTX__
// The staged tile kernels, each defined in its family's header (qmm_dp4a_kernel.hpp,
// qmm_mma_kernel.hpp); product_team instantiates only the one its launch names.
template <bool Deep>
inline void tile_dp4a(const Kernel& k, i64 t, i64 i0, i64 j0, void* memory, int tid, int nth);
template <bool Deep, bool Centred, int Stages>
inline void tile_mma(const Kernel& k, const Kernel::Item& w, void* memory, int tid, int nth);
template <int Stages>
[[gnu::always_inline]] inline void tile_wgmma(const Kernel& k, const Kernel::Item& w, void* memory, int tid, int nth);

template <int Slice> inline int swizzled(int r, int c) {
  constexpr int chunks = Slice / 16;
  return r * Slice + ((c ^ ((r / (8 / chunks)) % chunks)) << 4);
}

// A tile's staging: 16-byte cp.async copies of its slices, spread over the team. Lines 0-127 of a
// stage are the tile's rows of A', lines 128-255 its columns of B' (the swizzle repeats every 128
// lines). The staged kernels run teams whose threads split a slice's copies evenly in whole
// swizzle periods (evenly_staged: a multiple of 8 * chunks threads dividing 128 * chunks), so that
// thread tid copies chunk tid % chunks of the lines tid / chunks + r * nth / chunks of A' and of B'
// in every slice: its sources and places are worked out once per tile, from the kernel's
// parameters (which live in global memory, and the copies' memory clobbers would reload them for
// every copy), instead of a loop over copies tid + r * nth whose index arithmetic took issue slots
// the products need.
struct Staging {
  const u8* a;       // this thread's first A' chunk at depth 0
  const u8* b;       // and B' chunk
  i64 begin, end;    // the depth the tile kernel multiplies: all of kp, or a split-K part of it
  i64 step;          // bytes from one of its lines to the next
  u32 to, to_step;   // its first copy's offset in a stage, and from one line to the next
  // How many of its lines the operands hold (Kernel::a_lines): the tile's last ones may be cut,
  // and their copies only fill zeros (naming the tile's first line, back bytes before its own).
  u32 a_inside, b_inside, lines;
  i64 back;

  // Asks for the tile's slice at depth k0 into the stage at `stage` (a shared address), as one
  // commit group.
  template <int Slice> void request(i64 k0, u32 stage) const {
    const u8 *x = a + k0, *y = b + k0;
    const u32 last = stage + to + u32(tile_rows * Slice);
    if (a_inside == lines && b_inside == lines) {
      for (u32 at = stage + to; at < last; x += step, y += step, at += to_step) {
        copy_async_16(at, x);
        copy_async_16(at + u32(tile_rows * Slice), y);
      }
    } else {
      for (u32 at = stage + to, line = 0; at < last; x += step, y += step, at += to_step, ++line) {
        copy_async_16_fill(at, line < a_inside ? x : a - back + k0, line < a_inside ? 16 : 0);
        copy_async_16_fill(at + u32(tile_rows * Slice), line < b_inside ? y : b - back + k0, line < b_inside ? 16 : 0);
      }
    }
    copy_async_commit();
  }
};

// Depth part `part` of `parts` (the whole depth by default).
template <int Slice>
inline Staging staging(const Kernel& k, i64 t, i64 i0, i64 j0, int tid, int nth, i64 part = 0, i64 parts = 1) {
  constexpr int chunks = Slice / 16;
  const int line = tid / chunks, c = tid % chunks, apart = nth / chunks;
  const u8* b = reinterpret_cast<const u8*>(k.b_cols(t, j0));
  // This thread's lines line, line + apart, .. below `held`.
  const auto inside = [&](i64 held) {
    const i64 n = held < tile_rows ? held : tile_rows;
    return u32(n > line ? (n - line + apart - 1) / apart : 0);
  };
  return {k.a_rows(t, i0) + line * k.kp + 16 * c, b + line * k.kp + 16 * c, k.depth_begin(part, parts, Slice),
          k.depth_begin(part + 1, parts, Slice), apart * k.kp, u32(swizzled<Slice>(line, c)), u32(apart * Slice),
          inside(k.a_lines - i0), inside(k.b_lines - j0), u32(tile_rows / apart), line * k.kp};
}

// Slice s's stage.
template <int Slice, int Stages> inline u32 stage_of(i64 s, u32 shared) {
  return shared + u32(s % Stages) * 2 * u32(tile_rows) * Slice;
}

// The staged pipeline, Ahead slices ahead (at most Stages - 1; fewer leave stages to products still
// running, as wgmma's do): first_slices requests slices 0 .. Ahead - 1; before slice s is used,
// next_slice waits for this thread's copies of it, then for the team's (after which no thread
// still reads slice s + Ahead - Stages), and requests slice s + Ahead into the stage that slice
// used. Returns slice s's stage. A tile ends with team_barrier(), so that the next one may refill
// every stage.
template <int Slice, int Stages, int Ahead = Stages - 1>
inline void first_slices(const Staging& g, u32 shared) {
  static_assert(Ahead >= 1 && Ahead < Stages);
  for (int s = 0; s < Ahead; ++s) {
    if (g.begin + s * Slice < g.end)
      g.template request<Slice>(g.begin + s * Slice, stage_of<Slice, Stages>(s, shared));
    else
      copy_async_commit();  // empty groups keep the wait counts exact
  }
}

// next_slice in its two steps, for kernels with work of their own between them (wgmma):
// slice_copied waits for this thread's copies of the next slice; refill waits for the team's, then
// requests slice s + Ahead and returns slice s's stage.
template <int Ahead> inline void slice_copied() { copy_async_wait<Ahead - 1>(); }

template <int Slice, int Stages, int Ahead = Stages - 1>
inline u32 refill(const Staging& g, i64 k0, i64 s, u32 shared) {
  team_barrier();
  const i64 ahead = k0 + Ahead * Slice;
  if (ahead < g.end)
    g.template request<Slice>(ahead, stage_of<Slice, Stages>(s + Ahead, shared));
  else
    copy_async_commit();
  return stage_of<Slice, Stages>(s, shared);
}

template <int Slice, int Stages>
inline u32 next_slice(const Staging& g, i64 k0, i64 s, u32 shared) {
  slice_copied<Stages - 1>();
  return refill<Slice, Stages>(g, k0, s, shared);
}

// Whether the int32 accumulators end a depth slice of at most int32_depth after the slice at k0.
template <int Slice> inline bool fold_after(i64 kp, i64 k0) {
  return (k0 + Slice) % int32_depth == 0 || k0 + Slice == kp;
}

// Adds int32 accumulators into their int64 twins and clears them: one element, or arrays of any
// shape element by element (the kernels' register blocks; unrolled, so indices stay constant).
inline void fold_wide(i64& wide, i32& acc) {
  wide += acc;
  acc = 0;
}
template <class W, class A, std::size_t N> inline void fold_wide(W (&wide)[N], A (&acc)[N]) {
#pragma unroll
  for (std::size_t i = 0; i < N; ++i) fold_wide(wide[i], acc[i]);
}
#endif

// The 64 x 32 block at (r0, c0) of work item w's tile computed by one worker without team memory
// or warp instructions: the host fallback, and a device team without the staged kernels'
// conditions. A split tile's part puts its products in its partial.
template <bool Deep>
[[gnu::always_inline]] inline void block_scalar(const Kernel& k, const Kernel::Item& w, i64 r0, i64 c0) {
  const i64 t = w.at.t;
  const i64 first = k.depth_begin(w.part, w.parts, 4) / 4, last = k.depth_begin(w.part + 1, w.parts, 4) / 4;
  const Kernel::Tile tl = k.tile(t);
  for (i64 r = r0; r < r0 + 64 && r < k.M; ++r) {
    const Kernel::Row rw = k.row(tl, r);
    for (i64 c = c0; c < c0 + 32 && c < k.N; ++c) {
      const u32* x = reinterpret_cast<const u32*>(k.a_rows(t, r));
      const u32* y = reinterpret_cast<const u32*>(k.b_cols(t, c));
      i64 dot = 0;
      if (k.a_centred)
        for (i64 word = first; word < last; ++word) dot += dot4_centred(x[word], y[word], 0);
      else
        for (i64 word = first; word < last; ++word) dot += dot4(x[word], y[word], 0);
      if (w.partial)
        w.partial[(r - w.at.i0) * tile_cols + c - w.at.j0] = i32(dot);
      else
        k.template finish<Deep>(rw, k.col(tl, c), dot);
    }
  }
}

// A barrier of the team's threads (inside its parallel region on the host fallback).
inline void team_sync() {
#ifdef __NVPTX__
  team_barrier();
#else
#pragma omp barrier
#endif
}

// Counts a tile in its band (bands_done), after a fence_system() that made its outputs visible
// beyond the GPU (to the copy engine that takes the band out).
inline void count_in_band(i32* counter) {
#ifdef __NVPTX__
  __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
#else
  __atomic_fetch_add(counter, 1, __ATOMIC_RELEASE);
#endif
}

// After a tile's outputs are written by the threads that `sync` (a barrier) joins: their stores
// made visible beyond the GPU, then one count for the tile from the first of them.
template <class Sync> inline void count_tile_done(i32* counter, int tid, Sync sync) {
  fence_system();
  sync();
  if (tid == 0) count_in_band(counter);
}

// A split tile's words (Kernel::split_counts): its progress, then its chunks done, then per part
// the epoch of the call once a team has started it. The counts hold the call's epoch above 16
// bits; a word of an earlier call counts as zero. The progress word counts the parts done in its
// low byte and the chunks handed out after the first (progress_claim each) in the next: at most
// 128 parts (int32_depth / 512) and, after their reservations, one claim a chunk and one that
// finds none for each team that added a chunk up.
enum SplitWord : int { progress_word, chunks_done_word, started_words };
inline constexpr std::uint64_t progress_part = 1, progress_claim = 256;

inline std::uint64_t* split_words(const Kernel& k, i64 slot) {
  return k.split_counts + slot * split_count_words(k.split);
}

#ifdef __NVPTX__
inline constexpr int count_order = __ATOMIC_RELAXED;  // the fences around the counts order the products
#else
inline constexpr int count_order = __ATOMIC_ACQ_REL;
#endif

// Adds one to a count (an earlier call's counting as zero) and returns it.
inline i64 bump_count(std::uint64_t epoch, std::uint64_t* count) {
  const std::uint64_t fresh = epoch << 16;
  std::uint64_t seen = 0, next = 0;
  do next = (seen >> 16 == epoch ? seen : fresh) + 1;
  while (!__atomic_compare_exchange_n(count, &seen, next, false, count_order, __ATOMIC_RELAXED));
  return i64(next & 0xffff);
}

// Makes a count left by an earlier call (as read: `seen`) this call's zero, unless another team
// already has: after it the count holds the call's epoch, and one atomic add bumps it.
inline void make_count_current(std::uint64_t epoch, std::uint64_t* count, std::uint64_t seen) {
  if (seen >> 16 != epoch)
    __atomic_compare_exchange_n(count, &seen, epoch << 16, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

// Adds `amount` to a count that holds the call's epoch; returns the count before.
inline std::uint64_t add_to_count(std::uint64_t* count, std::uint64_t amount) {
  return __atomic_fetch_add(count, amount, count_order) & 0xffff;
}

// The count as a waiting team polls it: relaxed on a GPU, where a fence follows the poll; acquire on
// the host, where the fences are no-ops and the parts' products must be seen once it is complete.
inline std::uint64_t poll_count(const std::uint64_t* count) {
#ifdef __NVPTX__
  return load_relaxed(count);
#else
  return __atomic_load_n(count, __ATOMIC_ACQUIRE);
#endif
}

inline i64 split_chunks(const Kernel& k) { return (k.partial_rows + sum_rows - 1) / sum_rows; }

// As a team starts item w, a part of a split tile, by one of its threads (a store, no wait): the
// part has a running team, which the tile's other parts may wait for (split_part_done).
inline void split_part_started(const Kernel& k, std::uint64_t epoch, const Kernel::Item& w) {
  store_relaxed(split_words(k, w.slot) + started_words + w.part, epoch);
}

// What adding up split tile `slot` (at `at`) reads of k, taken before the fences that order the
// parts' products: after each fence k's fields would be read again (it clobbers memory), from the
// L2 (it empties the L1).
struct SplitSource {
  const u32x4* first;  // part 0's products
  i64 part_step, partial_rows, split, M;
  Kernel::Tile tl;
  i32* band;  // the count of the tile's band (Kernel::bands_done), or null
#ifdef __NVPTX__
  EpilogueScalars scalars;
#endif
};

inline SplitSource split_source(const Kernel& k, i64 slot, const Kernel::Place& at) {
  const i64 slot_size = k.partial_rows * tile_cols;
  return {reinterpret_cast<const u32x4*>(k.partials + slot * slot_size),
          k.split_tiles * slot_size / 4,
          k.partial_rows,
          k.split,
          k.M,
          k.tile(at.t),
          k.band_count(at),
#ifdef __NVPTX__
          epilogue_scalars<false>(k),
#endif
  };
}

// Rows first_row .. + rows_count of split tile `from` (at `at`): each output from the sum of every
// part's products, requantized, by threads tid of nth. Four neighbouring outputs of a row at a
// time, `ahead` groups of them per thread with their parts' loads in flight together (the loads
// take the time). The int32 sums wrap in unsigned lanes: the whole depth's dot fits int32. With
// the tile's terms in team memory (rows, cols) the outputs finish as the tensor-core epilogues'
// do, the kernel's scalars read once; without, each works its terms out (finish() reads the
// scalars from the argument block after each store, which waits for it).
inline void sum_split_rows(const Kernel& k, const SplitSource& from, const Kernel::Place& at, i64 first_row,
                           i64 rows_count, const Kernel::Row* rows, const Kernel::Col* cols, int tid, int nth) {
  constexpr int ahead = 4;
  const i64 begin = first_row * tile_cols / 4, end = std::min(first_row + rows_count, from.partial_rows) * tile_cols / 4;
  for (i64 v0 = begin + tid; v0 < end; v0 += ahead * nth) {
    u32x4 sum[ahead] = {};
#pragma unroll 8
    for (i64 part = 0; part < from.split; ++part)
#pragma unroll
      for (int u = 0; u < ahead; ++u)
        if (v0 + u * nth < end) sum[u] += from.first[part * from.part_step + v0 + u * nth];
    // One copy of the epilogue: a team runs this once a tile, from instructions not yet cached.
#pragma unroll 1
    for (int u = 0; u < ahead; ++u) {
      const i64 e = 4 * (v0 + u * nth), r = e / tile_cols, c = e % tile_cols;
      if (e >= 4 * end || at.i0 + r >= from.M) continue;
      const i64 v[4] = {i32(sum[u].x), i32(sum[u].y), i32(sum[u].z), i32(sum[u].w)};
#ifdef __NVPTX__
      if (rows) {
        finish_four<false>(rows[r], four_columns(cols + c, from.scalars), v, from.scalars);
        continue;
      }
#endif
      const Kernel::Row row = rows ? rows[r] : k.row(from.tl, at.i0 + r);
      for (int j = 0; j < 4 && at.j0 + c + j < k.N; ++j)
        k.template finish<false>(row, cols ? cols[c + j] : k.col(from.tl, at.j0 + c + j), v[j]);
    }
  }
}

// Split-K's hand-over (Kernel::split_counts), called by every thread that stored a part of split
// tile w.slot (tid of nth, joined by the barrier `sync`; through `said`, in team memory where the
// kernel has it, else the team's word of team_last, its first thread tells the others what it
// counted; k's fields are read before the first fence, as SplitSource's are): the part is counted,
// and the teams that add the tile up take its chunks of rows (sum_split_rows), the tile's terms in
// rows and cols (team memory, gathered there already or first; null: each output works its terms
// out). The team whose part completes the count takes chunk 0. Where there are more, a team with
// no further item that finds every part with a running team reserves the next chunk as it counts,
// and adds it up once the count is complete (nothing waits for a team that may not have started).
// Each team that added a chunk up then claims chunks until none is left, unless the count, once
// complete, showed every chunk handed out already. Where bands are waited for, the team that
// finishes the tile's last chunk counts it in its band.
template <class Sync>
inline void split_part_done(const Kernel& k, std::uint64_t epoch, const Kernel::Item& w, Kernel::Row* rows,
                            Kernel::Col* cols, bool gathered, i32* said, bool last_item, int tid, int nth, Sync sync) {
  std::uint64_t* words = split_words(k, w.slot);
  std::uint64_t* const progress = words + progress_word;
  const i64 chunks = split_chunks(k), split = k.split;
  const SplitSource from = split_source(k, w.slot, w.at);
  // Whether chunks may be left once the count is complete: some were not handed out with it.
  const auto chunks_left = [&](std::uint64_t count) { return i64((count >> 8) & 0xff) + 1 < chunks; };
  // What the first thread tells the others: bit 0, the part completed the count; bit 1, chunks may
  // be left; above them, the chunk reserved (0: none).
  constexpr i32 completed = 1, left = 2;
  bool running = false;
  if (tid == 0) {
    // The count and the parts' starts, read together while the team's products are still being
    // stored, and the count made this call's.
    const std::uint64_t seen = load_relaxed(progress);
    running = last_item && chunks > 1;
    for (i64 part = 0; running && part < split; part += 8) {
      std::uint64_t started[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) started[u] = part + u < split ? load_relaxed(words + started_words + part + u) : epoch;
#pragma unroll
      for (int u = 0; u < 8; ++u) running &= started[u] == epoch;
    }
    make_count_current(epoch, progress, seen);
  }
  sync();  // the team's products stored
  if (tid == 0) {
    fence_device();  // they are visible before the count (the barrier put them before this fence)
    const std::uint64_t reserving = running ? progress_claim : 0;
    const std::uint64_t before = add_to_count(progress, progress_part + reserving);
    fence_device();  // the parts' products, counted, before what this thread tells the others
    const bool complete = i64(before & 0xff) + 1 == split;
    const i64 reserved = running ? i64(before >> 8) + 1 : 0;
    *said = (complete ? completed | (chunks_left(before + reserving) ? left : 0) : 0) |
            i32(reserved < chunks ? reserved : 0) << 2;
  }
  sync();
  i32 told = *said;
  sync();  // every thread has read the word before its first thread writes it again
  const bool complete = told & completed;
  i64 chunk = complete ? 0 : told >> 2;
  if (!complete && chunk == 0) return;
  if (!complete) {
    if (tid == 0) {
      std::uint64_t count = 0;
      while (i64((count = poll_count(progress)) & 0xff) < split) {
#ifdef __NVPTX__
        asm volatile("nanosleep.u32 100;");
#else
        sched_yield();  // the parts' teams may need this core
#endif
      }
      fence_device();
      *said = chunks_left(count) ? left : 0;
    }
    sync();
    told = (told & ~left) | *said;
    sync();
  }
  i64 next = complete ? told >> 2 : 0;  // a chunk the completing team reserved, after chunk 0
  for (; chunk < chunks; gathered = true) {
    if (rows && !gathered) {
      gather_terms(k, w.at.t, w.at.i0, w.at.j0, rows, cols, tid, nth);
      sync();
    }
    sum_split_rows(k, from, w.at, chunk * sum_rows, sum_rows, rows, cols, tid, nth);
    if (from.band) {
      fence_system();
      sync();
      if (tid == 0 && bump_count(epoch, words + chunks_done_word) == chunks) {
        fence_system();  // the other chunks' outputs, counted, before the band's count
        count_in_band(from.band);
      }
    }
    if (next > 0) {
      chunk = next;
      next = 0;
      continue;
    }
    if (!(told & left)) break;
    sync();  // every thread has read the team's word
    if (tid == 0) *said = i32(add_to_count(progress, progress_claim) >> 8) + 1;
    sync();
    chunk = *said;
  }
  sync();  // the next item may gather its terms where these were read
}

// The body of the product kernels (SPMD: warp-collective instructions need one): teams take
// their work items in turn (Kernel::item: 128 x 128 tiles in bands, then the split tiles' depth
// parts); on a GPU with team memory and a team the staging splits evenly (staged_team_threads; one
// warpgroup for wgmma), the staged tile kernel of the family, otherwise (the host fallback) 64 x 32
// blocks thread by thread. Inlined into its kernel, which then calls no function: ptxas serializes
// wgmma whose pipeline crosses a call.
template <Family F, bool Deep, int Stages>
[[gnu::always_inline]] inline void product_team(const Kernel& k, std::uint64_t epoch) {
  const i64 items = k.items(), team = omp_get_team_num(), team_count = omp_get_num_teams();
  const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
#ifdef __NVPTX__
  u8* memory = static_cast<u8*>(llvm_omp_target_dynamic_shared_alloc());
  if constexpr (F == Family::wgmma)
    if (memory) memory += (wgmma_alignment - team_address(memory) % wgmma_alignment) % wgmma_alignment;
  const bool staged = memory && evenly_staged(nth) && (F != Family::wgmma || nth == wgmma_team_threads);
  // Where the staged kernels keep a tile's terms, for split_part_done.
  const int terms = F == Family::mma ? mma_stage_bytes<Stages> : 0;
  Kernel::Row* rows = staged ? reinterpret_cast<Kernel::Row*>(memory + terms) : nullptr;
  i32* said = staged && F == Family::mma ? reinterpret_cast<i32*>(memory + terms + tile_terms_bytes) : nullptr;
#else
  Kernel::Row* rows = nullptr;
  i32* said = nullptr;
#endif
  if (!said && k.team_last) said = k.team_last + team;
  for (i64 index = team; index < items; index += team_count) {
    const Kernel::Item w = k.item(index);
    const Kernel::Place& at = w.at;
    if (w.partial && tid == 0) split_part_started(k, epoch, w);
    await_ready(k.a_ready, at.i0 / tile_rows);
    await_ready(k.b_ready, at.j0 / tile_cols);
#ifdef __NVPTX__
    if (staged) {
      if constexpr (F == Family::wgmma) {
        static_assert(!Deep, "the wgmma kernel keeps int32 accumulators: deeper products run on mma.sync");
        tile_wgmma<Stages>(k, w, memory, tid, nth);
      } else if constexpr (F == Family::mma) {
        if (k.a_centred)
          tile_mma<Deep, true, Stages>(k, w, memory, tid, nth);
        else
          tile_mma<Deep, false, Stages>(k, w, memory, tid, nth);
      } else
        tile_dp4a<Deep>(k, at.t, at.i0, at.j0, memory, tid, nth);
    } else
#endif
      for (int b = tid; b < 8; b += nth) block_scalar<Deep>(k, w, at.i0 + (b / 4) * 64, at.j0 + (b % 4) * 32);
    if (w.partial) {
      // A split tile is counted once its parts are added up.
      Kernel::Col* cols = rows ? reinterpret_cast<Kernel::Col*>(rows + tile_rows) : nullptr;
      // The mma kernel gathers a tile's terms as it starts, where no stage overlays them.
      split_part_done(k, epoch, w, rows, cols, F == Family::mma, said, index + team_count >= items, tid, nth,
                      team_sync);
    } else if (k.bands_done)
      count_tile_done(k.band_count(at), tid, team_sync);
  }
}

}  // namespace hk::detail::offload::qmm
