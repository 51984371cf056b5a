// The host strategy a scan gets by default for a number of threads.
#include "schedules/strategies/scan_host_default.hpp"

#include <algorithm>

#include "hetkern/dtype.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/strategies/scan_host_common.hpp"

namespace hk::detail {
namespace {

// Below this much work a parallel region costs more than it saves.
constexpr std::int64_t scan_parallel_min_elements = std::int64_t(1) << 15;
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

// scan_parallel_default_tile for the call's layout s.
std::int64_t parallel_tile(const CumulativeCall& call, const ScanLayout& s, int threads) {
  const std::int64_t default_tile = scan_default_tile(call);
  if (s.lines_are_rows()) {
    // Whole lines per thread, a few panels each so that uneven lines still balance.
    const std::int64_t line_bytes = s.length * std::int64_t(size_of(call.input.desc.dtype()));
    const std::int64_t max_tile = std::clamp<std::int64_t>(scan_row_panel_max_bytes / line_bytes, 1, default_tile);
    return std::clamp<std::int64_t>(s.lines() / (scan_lines_per_thread * threads), 1, max_tile);
  }
  // Panels of side-by-side lines, no narrower than a cache line of lines nor smaller than
  // scan_min_panel_elements, enough for every thread; wider panels keep each row's run long for
  // the prefetcher.
  const std::int64_t per_group = std::max<std::int64_t>(1, threads / s.outer_lines());
  const std::int64_t narrowest = std::max<std::int64_t>(16, (scan_min_panel_elements + s.length - 1) / s.length);
  return std::clamp<std::int64_t>((s.inner_size() + per_group - 1) / per_group, std::min(narrowest, default_tile),
                                  default_tile);
}

}  // namespace

std::int64_t scan_parallel_default_tile(const CumulativeCall& call, int threads) {
  return parallel_tile(call, make_scan_layout(call), threads);
}

ScanStrategyPlan default_host_scan_plan(const CumulativeCall& call, int threads) {
  const ScanLayout s = make_scan_layout(call);
  const std::int64_t elements = s.lines() * s.length;
  if (threads <= 1 || elements < scan_parallel_min_elements) return plan_scan(call, Schedule("scan.tiled"));
  const auto parallel = [&](std::int64_t tile, std::int64_t team) {
    return plan_scan(call, Schedule("scan.parallel").set("tile", tile).set("threads", team));
  };
  const std::int64_t tile = parallel_tile(call, s, threads);
  if (s.lines_are_rows()) {
    if (s.lines() >= scan_lines_per_thread * std::int64_t(threads)) return parallel(tile, threads);
  } else {
    const std::int64_t panels = s.outer_lines() * ((s.inner_size() + tile - 1) / tile);
    if (panels >= threads) return parallel(tile, threads);
    // Too few panels for the team: scan.blocked would walk each of these lines alone, one strided
    // element at a time, far slower than one thread (docs/performance.md), so a thread per panel
    // walks its lines side by side instead, the rest of the team having nothing to do
    // (docs/performance.md: {1024,64} axis 0 on 16 threads, whose 4 panels ran on one thread).
    if (panels > 1) return parallel(tile, panels);
    return plan_scan(call, Schedule("scan.tiled"));
  }
  return plan_scan(call, Schedule("scan.blocked").set("threads", threads));
}

}  // namespace hk::detail
