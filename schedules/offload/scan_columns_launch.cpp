// scan.offload_columns: the launches of its one-pass and chunked kernels and the strategy's
// defaults.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <type_traits>

#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/gpu_arch.hpp"
#include "schedules/offload/kernel_words.hpp"
#include "schedules/offload/scan_columns_kernel.hpp"
#include "schedules/offload/scan_launch.hpp"
#include "schedules/offload/scan_limits.hpp"

namespace hk::detail::offload::scan {
namespace {

// The one-pass kernel's launch bound: 256 threads may take the 255 registers that 16 rows of
// float16 vectors and the next tile's need. Teams asked for more threads get these many. 4-byte
// integers, whose sums need no wider type, are bound at 512 threads (128 registers): that kernel
// ran faster at every width and team size, where the floating-point ones, bound so, spilled their
// float64 or float32 sums and ran slower (docs/performance.md).
constexpr int columns_max_team_threads = 256, columns_wide_team_threads = 512;
template <class T> constexpr bool columns_bound_wide = std::is_integral_v<T> && sizeof(T) == 4;
template <class T>
constexpr int columns_team_threads_most = columns_bound_wide<T> ? columns_wide_team_threads : columns_max_team_threads;
// With at least this many lines, one pass; with fewer, the axis is cut into chunks so that about
// column_target_threads threads work, each chunk at least column_min_chunk rows long. Below
// column_lines_wide_blocks lines, one pass takes blocks narrow enough for column_narrow_teams
// teams of two warps, 16 rows a thread and a ring of 3 tiles: from 2048 to 8192 lines that ran
// 1.4-1.7x faster than the chunks' three passes on an H100 (docs/performance.md).
constexpr std::int64_t column_lines_single_pass = 2048;
constexpr std::int64_t column_lines_wide_blocks = 16384;
constexpr std::int64_t column_narrow_teams = 256;
constexpr int column_pair_threads = 64;
constexpr std::int64_t column_target_threads = std::int64_t(1) << 18;
constexpr std::int64_t column_min_chunk = 64;
// Chunked: teams small enough that there are 2 on each of an H100's 132 SMs.
constexpr std::int64_t columns_teams_min = 264;
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
  if (element_bytes == 4) return {256, 512, offload_column_item_cap(element_bytes), 2};
  if (element_bytes == 2) return {256, 256, offload_column_item_cap(element_bytes), 1};
  return {256, 512, offload_column_item_cap(element_bytes), 1};
}

// Team memory of a one-pass launch: the warps' totals, then (stages > 1) the ring of tiles.
template <class T, int V> std::int64_t columns_team_bytes(int threads, int lanes, int items, int stages) {
  const std::int64_t ring = stages > 1 ? std::int64_t(stages) * items * threads * 16 : 0;
  return column_folds_bytes<AccOf<T>>(threads, lanes, V) + ring;
}

// The ring's stages a launch on `device` runs with: `requested` where the GPU grants a team their
// memory, else the most that do fit; 1 (the next tile in registers) where not even two fit.
template <class T, int V> int granted_column_stages(int requested, int device, int threads, int lanes, int items) {
  const std::int64_t limit = cuda_team_memory_limit(device) - runtime_team_memory_bytes;
  int stages = requested;
  while (stages > 1 && columns_team_bytes<T, V>(threads, lanes, items, stages) > limit) --stages;
  return stages < 2 ? 1 : stages;
}

// Launches one-pass scan.offload_columns on groups of V lines with runs of up to Cap rows: a
// kernel per (V, Cap, Staged), so that each reserves the registers of its own tiles only.
template <class T, class Op, int V, int Cap, bool Staged>
void columns_one_pass(int dev, const KernelArgs<T> a, int teams, int threads) {
  const std::size_t shared = std::size_t(columns_team_bytes<T, V>(threads, a.lanes, a.items, Staged ? a.stages : 1));
  // Two regions: clang 19 takes only a launch bound that does not depend on the template.
  if constexpr (columns_bound_wide<T>) {
    const KernelWords words = to_kernel_words(a);
    HK_KERNEL_WORDS_DECLARE(a, words)
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) \
    firstprivate(HK_KERNEL_WORDS(a)) \
    ompx_dyn_cgroup_mem(shared) ompx_attribute(__attribute__((launch_bounds(columns_wide_team_threads))))
#pragma omp parallel
    {
#ifdef __NVPTX__
      gpu_columns<T, Op, V, Cap, Staged>(from_kernel_words<KernelArgs<T>>(HK_KERNEL_WORDS(a)));
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
      gpu_columns<T, Op, V, Cap, Staged>(from_kernel_words<KernelArgs<T>>(HK_KERNEL_WORDS(a)));
#endif
    }
  }
}

template <class Op, class T>
void columns(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan, const void* carry) {
  using Acc = AccOf<T>;
  const Acc start = line_start_value<Op, Acc>(carry, exclusive);
  const std::int64_t lines = s.lines();
  const std::int64_t chunks = std::min(plan.chunks, s.length);
  const std::int64_t chunk = (s.length + chunks - 1) / chunks;
  const int teams = plan.teams, threads = plan.team_threads;
  if (chunks == 1) {
    KernelArgs<T> a{.s = s, .x = x, .y = y, .exclusive = exclusive, .start = start};
    a.vec = lines_in_vectors(s, x, y, sizeof(T));
    a.lanes = column_lanes<T>(plan.width, a.vec);
    const int team_threads = std::min(threads, columns_team_threads_most<T>);
    constexpr int cap = offload_column_item_cap(sizeof(T));
    a.items = std::clamp(plan.items, 1, cap);
    if (a.vec) {
      constexpr int v = vec_elems<T>, staged_cap = offload_column_max_items;
      const int staged_items = std::clamp(plan.items, 1, staged_cap);
      a.stages = granted_column_stages<T, v>(plan.stages, dev, team_threads, a.lanes, staged_items);
      if (a.stages > 1) {
        a.items = staged_items;
        columns_one_pass<T, Op, v, staged_cap, true>(dev, a, teams, team_threads);
      } else {
        columns_one_pass<T, Op, v, cap, false>(dev, a, teams, team_threads);
      }
    } else {
      columns_one_pass<T, Op, 1, cap, false>(dev, a, teams, team_threads);
    }
    return;
  }
  // Work item i: chunk i / lines of line i % lines, so that neighbouring threads read
  // neighbouring lines.
  const std::int64_t items = lines * chunks;
  ScratchLease scratch(dev, std::size_t(items) * sizeof(Acc));
  Acc* carries = static_cast<Acc*>(scratch.data());
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(threads) \
    device(dev) is_device_ptr(x, carries) firstprivate(s, chunk)
  for (std::int64_t i = 0; i < items; ++i) {
    std::int64_t xo, yo;
    line_offsets(s, i % lines, xo, yo);
    const std::int64_t q = (i / lines) * chunk;
    const std::int64_t count = run_count(s.length, q, chunk);
    carries[i] = column_run<T, Op, false>(x + xo + q * s.in_step, s.in_step, nullptr, 0, count,
                                          inclusive_start<Op, Acc>(), false);
  }
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(threads) \
    device(dev) is_device_ptr(carries) firstprivate(start)
  for (std::int64_t line = 0; line < lines; ++line) {
    Acc running = start;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const Acc fold = carries[c * lines + line];
      carries[c * lines + line] = running;
      running = Op::apply(running, fold);
    }
  }
#pragma omp target teams distribute parallel for num_teams(teams) thread_limit(threads) \
    device(dev) is_device_ptr(x, y, carries) firstprivate(s, chunk, exclusive)
  for (std::int64_t i = 0; i < items; ++i) {
    std::int64_t xo, yo;
    line_offsets(s, i % lines, xo, yo);
    const std::int64_t q = (i / lines) * chunk;
    const std::int64_t count = run_count(s.length, q, chunk);
    column_run<T, Op, true>(x + xo + q * s.in_step, s.in_step, y + yo + q * s.out_step,
                            s.out_step, count, carries[i], exclusive);
  }
}

}  // namespace

ScanPlan columns_defaults(const CumulativeCall& call) {
  const ScanLayout s = make_scan_layout(call);
  ScanPlan plan{.kind = ScanPlan::Kind::columns};
  const std::int64_t lines = s.lines();
  plan.chunks = lines >= column_lines_single_pass
                    ? 1
                    : std::clamp<std::int64_t>(column_target_threads / lines, 1,
                                               std::max<std::int64_t>(1, s.length / column_min_chunk));
  const ColumnDefaults d = column_defaults_of(call.input.desc.dtype(), element_bytes(call));
  plan.width = int(d.width_bytes / element_bytes(call));
  const std::int64_t vector_lines = lines_per_vector(s, call.input.data, call.output.data, element_bytes(call));
  if (plan.chunks == 1 && lines >= column_lines_single_pass && lines < column_lines_wide_blocks) {
    const bool vectors = vector_lines > 1;
    plan.team_threads = column_pair_threads;
    plan.items = vectors ? offload_column_max_items : offload_column_item_cap(element_bytes(call));
    plan.stages = vectors ? 3 : 1;
    const std::int64_t groups = lines / vector_lines;
    plan.width = int(std::clamp<std::int64_t>(groups / column_narrow_teams, 1, 32) * vector_lines);
  } else if (plan.chunks == 1) {
    plan.team_threads = d.threads;
    plan.items = d.items;
    plan.stages = d.stages;
  } else {
    plan.items = offload_column_item_cap(element_bytes(call));
    // Small teams when there are few threads in all, so that every SM gets some.
    const std::int64_t work = lines * plan.chunks;
    plan.team_threads = int(std::clamp<std::int64_t>(
        std::bit_floor(std::uint64_t(std::max<std::int64_t>(work / columns_teams_min, 1))), 32, 256));
  }
  plan.teams = int(offload_column_teams(lines, plan.chunks, plan.width, vector_lines, plan.team_threads));
  return plan;
}

void launch_columns(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry) {
  visit_kernel(call, [&](const ScanLayout& s, const auto* x, auto* y, auto op) {
    columns<decltype(op)>(device, s, x, y, call.options.exclusive, plan, carry);
  });
}

}  // namespace hk::detail::offload::scan
