// scan.offload_warp_rows: the launch of the warp-rows kernel and the strategy's defaults.
#include <omp.h>

#include <algorithm>

#include "schedules/offload/kernel_words.hpp"
#include "schedules/offload/scan_launch.hpp"
#include "schedules/offload/scan_warp_rows_kernel.hpp"

namespace hk::detail::offload::scan {
namespace {

// Four warps a team, a warp a line, four vectors loaded ahead: the fastest of the probe's variants
// in four of its five cases on an H100 (docs/performance.md, "A warp a line").
constexpr int warp_rows_default_threads = 128;
constexpr int warp_rows_default_vectors = offload_warp_rows_max_vectors;

template <class Op, class T>
void warp_rows(int dev, const ScanLayout s, const T* x, T* y, bool exclusive, const ScanPlan& plan,
               const void* carry) {
  KernelArgs<T> a{.s = s, .x = x, .y = y, .exclusive = exclusive};
  a.start = line_start_value<Op, AccOf<T>>(carry, exclusive);
  a.vec = rows_congruent(s, x, y);
  a.items = plan.items;
  const int teams = plan.teams, threads = plan.team_threads;
  const KernelWords words = to_kernel_words(a);
  HK_KERNEL_WORDS_DECLARE(a, words)
#pragma omp target teams num_teams(teams) thread_limit(threads) device(dev) firstprivate(HK_KERNEL_WORDS(a))
#pragma omp parallel
  {
#ifdef __NVPTX__
    gpu_warp_rows<T, Op>(from_kernel_words<KernelArgs<T>>(HK_KERNEL_WORDS(a)));
#endif
  }
}

}  // namespace

ScanPlan warp_rows_defaults(const CumulativeCall& call) {
  const ScanLayout s = make_scan_layout(call);
  ScanPlan plan{.kind = ScanPlan::Kind::warp_rows};
  plan.items = warp_rows_default_vectors;
  const std::int64_t warps = std::clamp<std::int64_t>(s.lines(), 1, warp_rows_default_threads / 32);
  plan.team_threads = int(32 * warps);
  plan.teams = int(offload_warp_rows_teams(s.lines(), plan.team_threads));
  return plan;
}

void launch_warp_rows(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry) {
  visit_kernel(call, [&](const ScanLayout& s, const auto* x, auto* y, auto op) {
    warp_rows<decltype(op)>(device, s, x, y, call.options.exclusive, plan, carry);
  });
}

}  // namespace hk::detail::offload::scan
