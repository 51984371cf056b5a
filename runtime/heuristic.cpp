// Default schedules from the shape and the thread count.
#include "runtime/heuristic.hpp"

#include <algorithm>

#include "hetkern/info.hpp"
#include "schedules/scan_layout.hpp"

namespace hk::detail {
namespace {

// Below this much work a parallel region costs more than it saves.
constexpr std::int64_t scan_parallel_min_elements = std::int64_t(1) << 15;
constexpr std::int64_t qmm_parallel_min_macs = std::int64_t(1) << 21;
constexpr std::int64_t scan_tile = 256;

}  // namespace

ScanPlan default_scan_plan(const CumulativeCall& call) {
  const int threads = default_threads();
  const ScanLayout s = make_scan_layout(call);
  const std::int64_t elements = s.lines() * s.length;
  ScanPlan plan;
  plan.kind = ScanPlan::Kind::tiled;
  plan.tile = scan_tile;
  if (threads <= 1 || elements < scan_parallel_min_elements) return plan;
  plan.threads = threads;
  // Enough tiles for every thread to get several, but tiles no narrower than a cache line of
  // lines when lines are walked side by side.
  const std::int64_t wanted = 4 * std::int64_t(threads);
  const std::int64_t min_tile = s.lines_are_rows() ? 1 : 16;
  const std::int64_t per_group = std::max<std::int64_t>(1, wanted / s.outer_lines());
  plan.tile = std::clamp<std::int64_t>(s.inner_size() / per_group, min_tile, scan_tile);
  const std::int64_t tiles = s.outer_lines() * ((s.inner_size() + plan.tile - 1) / plan.tile);
  if (tiles >= threads) {
    plan.kind = ScanPlan::Kind::parallel;
    return plan;
  }
  // Too few independent lines to share: cut the lines into blocks, a few per thread.
  plan.kind = ScanPlan::Kind::blocked;
  plan.tile = 0;
  const std::int64_t blocks_per_line = std::max<std::int64_t>(1, (wanted + s.lines() - 1) / s.lines());
  plan.block = std::max<std::int64_t>(4096, (s.length + blocks_per_line - 1) / blocks_per_line);
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
