// Default schedules from the shape and the thread count.
#include "runtime/tuning/heuristic.hpp"

#include <algorithm>

#include "hetkern/dtype.hpp"
#include "hetkern/info.hpp"
#include "schedules/scan_layout.hpp"
#ifdef HETKERN_OFFLOAD
#include "schedules/scan_offload.hpp"
#endif

namespace hk::detail {
namespace {

// Below this much work a parallel region costs more than it saves.
constexpr std::int64_t scan_parallel_min_elements = std::int64_t(1) << 15;
constexpr std::int64_t qmm_parallel_min_macs = std::int64_t(1) << 21;
// A panel of side-by-side lines takes at least this many elements: narrower panels of short
// lines cost their threads more than they save (docs/performance.md, the cost model on the H100
// machine: {1024,64} along axis 0).
constexpr std::int64_t scan_min_panel_elements = std::int64_t(1) << 16;
// Fewer independent lines than this many per thread leave threads idle or unbalanced: cut the
// lines into blocks instead.
constexpr std::int64_t scan_lines_per_thread = 4;
// The static schedule hands each thread whole panels of rows; when their count does not divide
// evenly, some threads wait for one more panel. Panels of at most this many bytes bound that
// wait however long the lines are.
constexpr std::int64_t scan_row_panel_max_bytes = std::int64_t(1) << 20;

}  // namespace

#ifdef HETKERN_OFFLOAD
const char* default_offload_scan_strategy(const CumulativeCall& call) {
  // The offload code picks the kernel family; that family's record fills the same defaults.
  constexpr const char* family_strategy[] = {"scan.offload_rows", "scan.offload_columns", "scan.offload_chained"};
  return family_strategy[int(default_offload_scan_plan(call).kind)];
}
#endif

// Names a strategy and the parameters the shape decides; the strategy's record fills the rest.
ScanStrategyPlan default_scan_plan(const CumulativeCall& call, [[maybe_unused]] DataHome home) {
#ifdef HETKERN_OFFLOAD
  if (home == DataHome::device) return plan_scan(call, Schedule(default_offload_scan_strategy(call)));
#endif
  const int threads = default_threads();
  const ScanLayout s = make_scan_layout(call);
  const std::int64_t elements = s.lines() * s.length;
  if (threads <= 1 || elements < scan_parallel_min_elements)
    return plan_scan(call, Schedule("scan.tiled"));
  const std::int64_t default_tile = std::get<TiledScanPlan>(plan_scan(call, Schedule("scan.tiled"))).tile;
  const std::int64_t wanted = scan_lines_per_thread * std::int64_t(threads);
  if (s.lines_are_rows()) {
    // Whole lines per thread, a few panels each so that uneven lines still balance.
    if (s.lines() >= wanted) {
      const std::int64_t line_bytes = s.length * std::int64_t(size_of(call.input.desc.dtype()));
      const std::int64_t max_tile = std::clamp<std::int64_t>(scan_row_panel_max_bytes / line_bytes, 1, default_tile);
      const std::int64_t tile = std::clamp<std::int64_t>(s.lines() / wanted, 1, max_tile);
      return plan_scan(call, Schedule("scan.parallel").set("tile", tile));
    }
  } else {
    // Panels of side-by-side lines, no narrower than a cache line of lines nor smaller than
    // scan_min_panel_elements, enough for every thread; wider panels keep each row's run long for
    // the prefetcher.
    const std::int64_t per_group = std::max<std::int64_t>(1, threads / s.outer_lines());
    const std::int64_t narrowest = std::max<std::int64_t>(16, (scan_min_panel_elements + s.length - 1) / s.length);
    const std::int64_t tile = std::clamp<std::int64_t>((s.inner_size() + per_group - 1) / per_group,
                                                       std::min(narrowest, default_tile), default_tile);
    const std::int64_t panels = s.outer_lines() * ((s.inner_size() + tile - 1) / tile);
    if (panels >= threads) return plan_scan(call, Schedule("scan.parallel").set("tile", tile));
    // Too few panels for the team: scan.blocked would walk each of these lines alone, one strided
    // element at a time, far slower than one thread (docs/performance.md), so a thread per panel
    // walks its lines side by side instead, the rest of the team having nothing to do
    // (docs/performance.md: {1024,64} axis 0 on 16 threads, whose 4 panels ran on one thread).
    if (panels > 1)
      return plan_scan(call, Schedule("scan.parallel").set("tile", tile).set("threads", panels));
    return plan_scan(call, Schedule("scan.tiled"));
  }
  return plan_scan(call, Schedule("scan.blocked"));
}

QmmStrategyPlan default_qmm_plan(const QmmProblem& p, [[maybe_unused]] DataHome home) {
#ifdef HETKERN_OFFLOAD
  // Device tensors: the tensor-core kernel with its defaults.
  if (home == DataHome::device) return plan_qmm(p, Schedule("qmm.offload_mma"));
#endif
  const std::int64_t macs = p.batch[0] * p.batch[1] * p.M * p.N * p.K;
  const bool parallel = macs >= qmm_parallel_min_macs && default_threads() > 1;
  return plan_qmm(p, Schedule(parallel ? "qmm.parallel" : "qmm.tiled"));
}

}  // namespace hk::detail
