// scan.offload_rows: the launch of the rows kernel and the strategy's defaults.
#include <omp.h>

#include <algorithm>
#include <bit>

#include "runtime/platform/launch_shape.hpp"
#include "schedules/offload/kernel_words.hpp"
#include "schedules/offload/scan_launch.hpp"
#include "schedules/offload/scan_rows_kernel.hpp"

namespace hk::detail::offload::scan {
namespace {

// The launch bound: the most threads a team may have, which caps the registers ptxas gives a
// thread at 65536 / threads (here 128, a few spills that stay in L1; the higher bounds measured
// in docs/gpu-measurements.md avoid them but run slower), and whose warps' buffers fit the team
// memory. Teams asked for more threads get these many.
constexpr int rows_max_team_threads = 512;
// Threads per team (more for 2-byte types) and tiles requested into the L2 ahead of the loads.
constexpr int rows_default_threads = 64;
constexpr int rows_default_threads_2byte = 128;
constexpr int rows_default_ahead = 1;

template <class Op, class T>
void rows(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan, const void* carry) {
  KernelArgs<T> a{.s = s, .x = x, .y = y, .exclusive = exclusive};
  a.start = line_start_value<Op, AccOf<T>>(carry, exclusive);
  a.vec = rows_congruent(s, x, y);
  a.items = plan.items;
  a.ahead = plan.ahead;
  const LaunchShape shape = launch_shape(dev, plan.teams, std::min(plan.team_threads, rows_max_team_threads));
  const int teams = shape.teams, threads = shape.threads;
  const std::size_t shared = rows_shared_bytes<AccOf<T>>(threads);
  a.buffers = rows_buffers<AccOf<T>>(threads);  // for the threads asked for: a team given fewer fits too
  const KernelWords words = to_kernel_words(a);
  HK_KERNEL_WORDS_DECLARE(a, words)
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) \
    firstprivate(HK_KERNEL_WORDS(a)) \
    ompx_dyn_cgroup_mem(shared) ompx_attribute(__attribute__((launch_bounds(rows_max_team_threads))))
#pragma omp parallel
  {
#ifdef __NVPTX__
    gpu_rows<T, Op>(from_kernel_words<KernelArgs<T>>(HK_KERNEL_WORDS(a)));
#else
    serial_lines<T, Op>(from_kernel_words<KernelArgs<T>>(HK_KERNEL_WORDS(a)));
#endif
  }
}

}  // namespace

ScanPlan rows_defaults(const CumulativeCall& call) {
  const ScanLayout s = make_scan_layout(call);
  ScanPlan plan{.kind = ScanPlan::Kind::rows};
  plan.items = int(offload_rows_max_item_bytes / element_bytes(call));
  plan.ahead = rows_default_ahead;
  // Short lines: fewer threads, so that a tile is not mostly idle lanes.
  plan.team_threads = int(std::clamp<std::int64_t>(
      std::int64_t(std::bit_ceil(std::uint64_t((s.length + plan.items - 1) / plan.items))), 32,
      element_bytes(call) == 2 ? rows_default_threads_2byte : rows_default_threads));
  plan.teams = int(std::clamp<std::int64_t>(s.lines(), 1, rows_default_teams_cap));
  return plan;
}

void launch_rows(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry) {
  visit_kernel(call, [&](const ScanLayout& s, const auto* x, auto* y, auto op) {
    rows<decltype(op)>(device, s, x, y, call.options.exclusive, plan, carry);
  });
}

}  // namespace hk::detail::offload::scan
