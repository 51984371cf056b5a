// scan.offload_chained: the launch of the chained kernels (staged through team memory where the
// lines allow, else in registers), their tile states kept across calls, and the strategy's
// defaults.
#include <omp.h>

#include <algorithm>

#include "schedules/offload/kernel_words.hpp"
#include "schedules/offload/scan_chain_scratch.hpp"
#include "schedules/offload/scan_chained_kernel.hpp"
#include "schedules/offload/scan_launch.hpp"

namespace hk::detail::offload::scan {
namespace {

// Default tiles: 128 threads with runs of 112 bytes, and as many teams as fit an H100 at once
// (5 staged teams of 128 threads on each of its 132 SMs: 96 registers a thread under
// staged_launch_bound, two 14 KB tiles of team memory each).
constexpr int chained_default_threads = 128;
constexpr std::int64_t chained_default_item_bytes = 112;
constexpr std::int64_t chained_teams_cap = 660;
constexpr int staged_max_threads = 512;
// The staged kernel's launch bound: 65536 registers / 640 threads caps ptxas at 96 registers a
// thread, so that 5 teams of 128 threads fit an SM (team memory allows 6); the few spills under
// that cap cost less than a team fewer.
constexpr int staged_launch_bound = 640;

template <class Op, class T>
void chained(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan, const void* carry) {
  KernelArgs<T> a{.s = s, .x = x, .y = y, .exclusive = exclusive};
  a.start = line_start_value<Op, AccOf<T>>(carry, exclusive);
  a.vec = rows_vectorizable(s, x, y);
  a.width = std::int64_t(plan.team_threads) * plan.items;
  a.tiles = (s.length + a.width - 1) / a.width;
  const std::int64_t units = s.lines() * a.tiles;
  const int teams = plan.teams, threads = plan.team_threads;
  KeptScratch& scratch = kept_scratch(dev, "scan.offload_chained");
  const auto hold = hold_chain_scratch(scratch, dev, units, a);
  // Staged through team memory where the lines allow 16-byte copies and the tile buffers fit. Its
  // launch bound caps the registers at 96 per thread, so that five teams of 128 threads fit an SM.
  const std::int64_t staged_bytes = staged_team_bytes<T>(threads, plan.items);
  if (a.vec && plan.items % vec_elems<T> == 0 && staged_bytes <= max_team_memory_bytes &&
      threads <= staged_max_threads) {
    a.team_bytes = staged_bytes;
    const std::size_t shared = std::size_t(staged_bytes);
    const KernelWords words = to_kernel_words(a);
    HK_KERNEL_WORDS_DECLARE(a, words)
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) \
    firstprivate(HK_KERNEL_WORDS(a)) \
    ompx_dyn_cgroup_mem(shared) ompx_attribute(__attribute__((launch_bounds(staged_launch_bound))))
#pragma omp parallel
    {
#ifdef __NVPTX__
      gpu_chained_staged<T, Op>(from_kernel_words<KernelArgs<T>>(HK_KERNEL_WORDS(a)));
#endif
    }
  } else {
    const std::size_t shared = sizeof(TileShared<AccOf<T>>);
    const KernelWords words = to_kernel_words(a);
    HK_KERNEL_WORDS_DECLARE(a, words)
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) \
    firstprivate(HK_KERNEL_WORDS(a)) \
    ompx_dyn_cgroup_mem(shared)
#pragma omp parallel
    {
#ifdef __NVPTX__
      gpu_chained<T, Op>(from_kernel_words<KernelArgs<T>>(HK_KERNEL_WORDS(a)));
#endif
    }
  }
  trim_kept(scratch, dev, chain_kept_bytes);
}

}  // namespace

ScanPlan chained_defaults(const CumulativeCall& call) {
  const ScanLayout s = make_scan_layout(call);
  ScanPlan plan{.kind = ScanPlan::Kind::chained};
  plan.team_threads = chained_default_threads;
  plan.items = int(chained_default_item_bytes / element_bytes(call));
  const std::int64_t width = std::int64_t(plan.team_threads) * plan.items;
  plan.teams = int(std::clamp<std::int64_t>(s.lines() * ((s.length + width - 1) / width), 1, chained_teams_cap));
  return plan;
}

void launch_chained(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry) {
  visit_kernel(call, [&](const ScanLayout& s, const auto* x, auto* y, auto op) {
    chained<decltype(op)>(device, s, x, y, call.options.exclusive, plan, carry);
  });
}

}  // namespace hk::detail::offload::scan
