// Default schedules from the shape and the thread count.
#include "runtime/tuning/heuristic.hpp"

#include <algorithm>

#include "hetkern/info.hpp"
#include "schedules/scan_layout.hpp"

namespace hk::detail {
namespace {

// Below this much work a parallel region costs more than it saves.
constexpr std::int64_t scan_parallel_min_elements = std::int64_t(1) << 15;
constexpr std::int64_t qmm_parallel_min_macs = std::int64_t(1) << 21;
// Fewer independent lines than this many per thread leave threads idle or unbalanced: cut the
// lines into blocks instead.
constexpr std::int64_t scan_lines_per_thread = 4;

}  // namespace

ScanPlan default_scan_plan(const CumulativeCall& call) {
  const int threads = default_threads();
  const ScanLayout s = make_scan_layout(call);
  const std::int64_t elements = s.lines() * s.length;
  ScanPlan plan;
  plan.kind = ScanPlan::Kind::tiled;
  plan.tile = scan_default_tile(call);
  if (threads <= 1 || elements < scan_parallel_min_elements) return plan;
  plan.stream = scan_streams_by_default(call);
  plan.threads = threads;
  plan.pin = default_pin_policy();
  const std::int64_t wanted = scan_lines_per_thread * std::int64_t(threads);
  if (s.lines_are_rows()) {
    if (s.lines() >= wanted) {
      // Whole lines per thread, a few panels each so that uneven lines still balance.
      plan.kind = ScanPlan::Kind::parallel;
      plan.tile = std::clamp<std::int64_t>(s.lines() / wanted, 1, plan.tile);
      return plan;
    }
  } else {
    // Panels of side-by-side lines, no narrower than a cache line of lines, enough for every
    // thread; wider panels keep each row's run long for the prefetcher.
    const std::int64_t per_group = std::max<std::int64_t>(1, threads / s.outer_lines());
    plan.tile = std::clamp<std::int64_t>((s.inner_size() + per_group - 1) / per_group, 16, plan.tile);
    const std::int64_t panels = s.outer_lines() * ((s.inner_size() + plan.tile - 1) / plan.tile);
    if (panels >= threads) {
      plan.kind = ScanPlan::Kind::parallel;
      return plan;
    }
    // Too few panels for the team: scan.blocked would walk each of these lines alone, one strided
    // element at a time (8x slower than one thread on {65536,16} axis 0), so one thread walks
    // them side by side instead.
    plan.kind = ScanPlan::Kind::tiled;
    plan.tile = scan_default_tile(call);
    plan.threads = 1;
    plan.pin = PinPolicy::none;
    return plan;
  }
  plan.kind = ScanPlan::Kind::blocked;
  plan.tile = 0;
  plan.block = scan_default_block(call);
  return plan;
}

QmmPlan default_qmm_plan(const QmmProblem& p) {
  const std::int64_t macs = p.batch[0] * p.batch[1] * p.M * p.N * p.K;
  const int threads = macs >= qmm_parallel_min_macs ? default_threads() : 1;
  QmmPlan plan = default_qmm_blocking(p, threads);
  plan.kind = threads > 1 ? QmmPlan::Kind::parallel : QmmPlan::Kind::tiled;
  return plan;
}

}  // namespace hk::detail
