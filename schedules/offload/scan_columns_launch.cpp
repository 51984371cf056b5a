// scan.offload_columns: the launches of its one-pass and chained kernels and the strategy's
// defaults.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <type_traits>

#include "hetkern/device.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/gpu_arch.hpp"
#include "schedules/offload/kernel_words.hpp"
#include "schedules/offload/scan_chain_scratch.hpp"
#include "schedules/offload/scan_columns_chained_kernel.hpp"
#include "schedules/offload/scan_launch.hpp"
#include "schedules/offload/scan_limits.hpp"

namespace hk::detail::offload::scan {
namespace {

// The kernels' launch bound: 256 threads may take the 255 registers that 16 rows of float16
// vectors and the next tile's need. Teams asked for more threads get these many. In one pass,
// 4-byte integers, whose sums need no wider type, are bound at 512 threads (128 registers): that
// kernel ran faster at every width and team size, where the floating-point ones, bound so, spilled
// their float64 or float32 sums and ran slower (docs/performance.md); the chained kernel, which
// holds more, spilled there too.
constexpr int columns_max_team_threads = 256, columns_wide_team_threads = 512;
template <class T> constexpr bool columns_bound_wide = std::is_integral_v<T> && sizeof(T) == 4;
template <class T>
constexpr int columns_team_threads_most = columns_bound_wide<T> ? columns_wide_team_threads : columns_max_team_threads;
// With at least column_lines_single_pass lines, each team walks the whole axis of its block of
// lines; below column_lines_wide_blocks lines in blocks narrow enough for column_narrow_teams
// teams of two warps, 16 rows a thread and a ring of 3 tiles: from 2048 to 8192 lines that ran
// 1.4-1.7x faster than three passes over chunks of the axis on an H100 (docs/performance.md).
// Those blocks are a power of two of groups wide, so that a warp's 32 lanes share them evenly:
// float16 blocks of 3, 5, 6 or 7 groups ran at 0.43-0.53 of the copy on an H100, and of the power
// of two below at 0.58-0.72 (docs/performance.md).
// With fewer lines, blocks of column_chain_block_bytes and the axis cut into chunks of
// column_chain_tiles tiles, chained by look-back.
constexpr std::int64_t column_lines_single_pass = 2048;
constexpr std::int64_t column_lines_wide_blocks = 16384;
// 2- and 4-byte types other than float32 keep their teams of 256 threads on wide blocks down to
// column_lines_full_teams lines: on an H100, 80 to 112 such teams (fewer than its 132
// multiprocessors) ran 0.07-0.24 of the copy faster than the narrow blocks at 10240-14336 lines,
// and at 8192 lines and below mostly slower (docs/performance.md).
constexpr std::int64_t column_lines_full_teams = 10240;
constexpr std::int64_t column_narrow_teams = 256;
constexpr int column_pair_threads = 64;
constexpr std::int64_t column_chain_block_bytes = 128;
constexpr std::int64_t column_chain_tiles = 4;
// 2-byte vectors in chunks: teams of four warps, the same chunks in two tiles, a ring of 3. On an
// H100 1.07-1.25x the two-warp teams' speed on four shapes, where float32 and int32 gained on
// some and lost on others (docs/performance.md).
constexpr int column_chain_half_threads = 128, column_chain_half_stages = 3;
// One pass in teams of 256 threads on more blocks of lines than the GPU has multiprocessors, but
// no more than half as many again: some multiprocessors then walk two blocks while the others walk
// one, and teams of half as many threads ran 0.04-0.12 of the copy faster for float16 and int32 on
// an H100, where on no more blocks than multiprocessors, or on nearly twice as many, the full teams
// were faster (docs/performance.md).
constexpr int column_full_threads = 256;
bool blocks_a_few_past_multiprocessors(std::int64_t blocks, std::int64_t multiprocessors) {
  return multiprocessors > 0 && blocks > multiprocessors && 2 * blocks <= 3 * multiprocessors;
}
// One pass: a team's warps share a block of neighbouring lines and split its tiles' rows, each
// thread holding `items` rows of a tile, `stages` - 1 tiles ahead in flight through team memory
// (stages = 1: the next tile in registers, where the register kernel has room beside the sums).
// float32: teams of two warps on 256 bytes of lines, 16 rows a thread, two tiles ahead: on
// {16384,16384} 256 teams, about two a multiprocessor, whose barriers wait on one other warp, not
// on seven. Other 4-byte types: 256 threads on 512 bytes, 8 rows, the next tile in team memory;
// 2-byte types: 256 threads on 256 bytes, 16 rows in registers; wider ones: 8 rows in registers
// (docs/performance.md).
struct ColumnDefaults {
  int threads;
  std::int64_t width_bytes;
  int items, stages;
};
ColumnDefaults column_defaults_of(DataType type, std::int64_t element_bytes) {
  if (type == DataType::float32) return {column_pair_threads, 256, offload_column_max_items, 3};
  if (element_bytes == 4) return {column_full_threads, 512, offload_column_item_cap(element_bytes), 2};
  if (element_bytes == 2) return {column_full_threads, 256, offload_column_item_cap(element_bytes), 1};
  return {column_full_threads, 512, offload_column_item_cap(element_bytes), 1};
}

// Team memory of a launch: (chained) the ticket and a value per line of a block, the warps'
// totals, then (stages > 1) the ring of tiles and (chained) the carries kept per tile.
template <class T, int V, bool Chained>
std::int64_t columns_team_bytes(int threads, int lanes, int items, int stages) {
  using Acc = AccOf<T>;
  const std::int64_t ring = stages > 1 ? std::int64_t(stages) * items * threads * 16 : 0;
  const std::int64_t head = Chained ? column_chain_head_bytes<Acc>(lanes, V) : 0;
  const std::int64_t kept = Chained && stages > 1 ? column_chain_kept_bytes<Acc>(threads, stages, V) : 0;
  return head + column_folds_bytes<Acc>(threads, lanes, V) + ring + kept;
}

// The ring's stages a launch on `device` runs with: `requested` where the GPU grants a team their
// memory, else the most that do fit; 1 (the next tile in registers) where not even two fit.
template <class T, int V, bool Chained>
int granted_column_stages(int requested, int device, int threads, int lanes, int items) {
  const std::int64_t limit = cuda_team_memory_limit(device) - runtime_team_memory_bytes;
  int stages = requested;
  while (stages > 1 && columns_team_bytes<T, V, Chained>(threads, lanes, items, stages) > limit) --stages;
  return stages < 2 ? 1 : stages;
}

#ifdef __NVPTX__
template <class T, class Op, int V, int Cap, bool Staged, bool Chained>
void run_columns_kernel(const KernelArgs<T>& a) {
  if constexpr (Chained)
    gpu_columns_chained<T, Op, V, Cap, Staged>(a);
  else
    gpu_columns<T, Op, V, Cap, Staged>(a);
}
#endif

// Launches scan.offload_columns, one pass or chained, on groups of V lines with runs of up to Cap
// rows: a kernel per (V, Cap, Staged, Chained), so that each reserves the registers of its own
// tiles only.
template <class T, class Op, int V, int Cap, bool Staged, bool Chained>
void columns_kernel(int dev, const KernelArgs<T> a, int teams, int threads) {
  const std::size_t shared =
      std::size_t(columns_team_bytes<T, V, Chained>(threads, a.lanes, a.items, Staged ? a.stages : 1));
  // Two regions: clang 19 takes only a launch bound that does not depend on the template.
  if constexpr (columns_bound_wide<T> && !Chained) {
    const KernelWords words = to_kernel_words(a);
    HK_KERNEL_WORDS_DECLARE(a, words)
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) \
    firstprivate(HK_KERNEL_WORDS(a)) \
    ompx_dyn_cgroup_mem(shared) ompx_attribute(__attribute__((launch_bounds(columns_wide_team_threads))))
#pragma omp parallel
    {
#ifdef __NVPTX__
      run_columns_kernel<T, Op, V, Cap, Staged, Chained>(from_kernel_words<KernelArgs<T>>(HK_KERNEL_WORDS(a)));
#endif
    }
  } else {
    const KernelWords words = to_kernel_words(a);
    HK_KERNEL_WORDS_DECLARE(a, words)
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) \
    firstprivate(HK_KERNEL_WORDS(a)) \
    ompx_dyn_cgroup_mem(shared) ompx_attribute(__attribute__((launch_bounds(columns_max_team_threads))))
#pragma omp parallel
    {
#ifdef __NVPTX__
      run_columns_kernel<T, Op, V, Cap, Staged, Chained>(from_kernel_words<KernelArgs<T>>(HK_KERNEL_WORDS(a)));
#endif
    }
  }
}

// The kernel for a's lines: 16-byte vectors of adjacent lines where they allow, their tiles ahead
// in team memory where two or more stages fit, else in registers; single lines otherwise.
template <class T, class Op, bool Chained>
void columns_kernels(int dev, KernelArgs<T> a, const ScanPlan& plan, int threads) {
  if (a.vec) {
    constexpr int v = vec_elems<T>, staged_cap = offload_column_max_items;
    const int staged_items = std::clamp(plan.items, 1, staged_cap);
    a.stages = granted_column_stages<T, v, Chained>(plan.stages, dev, threads, a.lanes, staged_items);
    if (a.stages > 1) {
      a.items = staged_items;
      columns_kernel<T, Op, v, staged_cap, true, Chained>(dev, a, plan.teams, threads);
    } else {
      columns_kernel<T, Op, v, offload_column_item_cap(sizeof(T)), false, Chained>(dev, a, plan.teams, threads);
    }
  } else {
    columns_kernel<T, Op, 1, offload_column_item_cap(sizeof(T)), false, Chained>(dev, a, plan.teams, threads);
  }
}

template <class Op, class T>
void columns(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan, const void* carry) {
  KernelArgs<T> a{.s = s, .x = x, .y = y, .exclusive = exclusive};
  a.start = line_start_value<Op, AccOf<T>>(carry, exclusive);
  a.vec = lines_in_vectors(s, x, y, sizeof(T));
  a.lanes = int(offload_column_block_groups(plan.width, a.vec ? vec_elems<T> : 1));
  a.items = std::clamp(plan.items, 1, offload_column_item_cap(sizeof(T)));
  // Chunks of whole tiles: no more of them than tiles of the threads asked for.
  const int threads = std::min(plan.team_threads, columns_max_team_threads);
  const std::int64_t tile_rows = offload_column_tile_rows(threads, a.lanes, a.items);
  const std::int64_t chunks = std::min(plan.chunks, (s.length + tile_rows - 1) / tile_rows);
  if (chunks <= 1)
    return columns_kernels<T, Op, false>(dev, a, plan, std::min(plan.team_threads, columns_team_threads_most<T>));
  a.tiles = chunks;
  KeptScratch& scratch = kept_scratch(dev, "scan.offload_columns");
  const auto hold = hold_chain_scratch(scratch, dev, chunks * s.lines(), a);
  columns_kernels<T, Op, true>(dev, a, plan, threads);
  trim_kept(scratch, dev, chain_kept_bytes);
}

}  // namespace

ScanPlan columns_defaults(const CumulativeCall& call) {
  const ScanLayout s = make_scan_layout(call);
  ScanPlan plan{.kind = ScanPlan::Kind::columns, .chunks = 1};
  const std::int64_t lines = s.lines(), bytes = element_bytes(call);
  const ColumnDefaults d = column_defaults_of(call.input.desc.dtype(), bytes);
  const std::int64_t vector_lines = lines_per_vector(s, call.input.data, call.output.data, bytes);
  const std::int64_t groups = lines / vector_lines;
  plan.team_threads = d.threads;
  plan.items = d.items;
  plan.stages = d.stages;
  plan.width = int(d.width_bytes / bytes);
  // 2- and 4-byte types whose one pass runs in full teams: float16, int32 and their like.
  const bool full_team_type = d.threads == column_full_threads && (bytes == 2 || bytes == 4);
  if (lines < (full_team_type ? column_lines_full_teams : column_lines_wide_blocks)) {
    const bool vectors = vector_lines > 1;
    plan.team_threads = column_pair_threads;
    plan.items = vectors ? offload_column_max_items : offload_column_item_cap(bytes);
    plan.stages = vectors ? 3 : 1;
    const auto block_groups = std::uint64_t(std::clamp<std::int64_t>(groups / column_narrow_teams, 1, 32));
    plan.width = int(std::int64_t(std::bit_floor(block_groups)) * vector_lines);
  }
  if (lines < column_lines_single_pass) {
    // Few blocks: each a cache line of lines wide (or all the lines), the axis cut into chunks of
    // column_chain_tiles tiles of two warps (2-byte vectors: half as many tiles of four warps).
    const std::int64_t block_groups =
        std::clamp<std::int64_t>(column_chain_block_bytes / (bytes * vector_lines), 1, std::min<std::int64_t>(groups, 32));
    plan.width = int(block_groups * vector_lines);
    const std::int64_t tile_rows = offload_column_tile_rows(plan.team_threads, block_groups, plan.items);
    plan.chunks = std::max<std::int64_t>(1, s.length / (tile_rows * column_chain_tiles));
    // A ring of as many tiles as a chunk holds, so that each chunk is read once.
    if (plan.chunks > 1 && vector_lines > 1) {
      const bool half = bytes == 2;
      plan.team_threads = half ? column_chain_half_threads : plan.team_threads;
      plan.stages = half ? column_chain_half_stages : int(column_chain_tiles);
    }
  }
  plan.teams = int(offload_column_teams(lines, plan.chunks, plan.width, vector_lines));
  if (full_team_type && plan.chunks == 1 && plan.team_threads == column_full_threads &&
      blocks_a_few_past_multiprocessors(plan.teams, cuda_multiprocessors(offload_device())))
    plan.team_threads = column_full_threads / 2;
  return plan;
}

void launch_columns(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry) {
  visit_kernel(call, [&](const ScanLayout& s, const auto* x, auto* y, auto op) {
    columns<decltype(op)>(device, s, x, y, call.options.exclusive, plan, carry);
  });
}

}  // namespace hk::detail::offload::scan
