// A host-tensor matmul on a GPU in bands of rows (qmm_host_bands.hpp): B and the bands of A cross
// the link one after another through one staged copy, each band's product starts as soon as its
// rows of A are there, and its outputs go back while later bands still arrive and multiply.
#include "schedules/strategies/qmm_host_bands.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "hetkern/device.hpp"
#include "runtime/platform/device_memory.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/strategies/qmm_parts.hpp"
#include "schedules/strategies/split_common.hpp"

namespace hk::detail {
namespace {

using i64 = std::int64_t;
constexpr i64 tile = qmm_offload_tile;
// Below this many bytes (A, B and the output together) the copies are too short to overlap.
constexpr std::size_t least_bytes = std::size_t(8) << 20;
// More bands shorten what cannot overlap (B with the first band's rows of A in, the last band's
// outputs back) and add a launch each.
constexpr i64 most_bands = 8;
// A band has at least this many output tiles, so that its launch alone fills a large GPU.
constexpr i64 least_band_tiles = 128;

std::vector<SplitRange> host_bands(const QmmProblem& p) {
  const i64 tiles_m = (p.M + tile - 1) / tile, tiles_n = (p.N + tile - 1) / tile;
  const i64 band_tiles = std::max((tiles_m + most_bands - 1) / most_bands, (least_band_tiles + tiles_n - 1) / tiles_n);
  std::vector<SplitRange> bands;
  for (i64 r = 0; r < tiles_m; r += band_tiles) bands.push_back({r * tile, std::min(p.M, (r + band_tiles) * tile)});
  return bands;
}

// Bytes from `from` to `to` (both within one host tensor's span).
std::size_t offset_of(const void* to, const void* from) {
  return std::size_t(static_cast<const char*>(to) - static_cast<const char*>(from));
}

}  // namespace

bool qmm_host_bands_apply(const QmmProblem& p) {
  if (p.packed_b || p.batch[0] * p.batch[1] != 1 || p.M == 0 || p.N == 0 || !qmm_b_columns_fit(p)) return false;
  const QmmSpans spans = qmm_spans(p);
  if (spans.out_has_gaps() || spans.a + spans.b + spans.out < least_bytes) return false;
  const std::vector<SplitRange> bands = host_bands(p);
  return bands.size() > 1 && qmm_parts_own_their_spans(p, {-1, p.M}, bands);
}

namespace {

void run_in_bands(const QmmProblem& p, const QmmPlan& plan, int device) {
  const std::vector<SplitRange> bands = host_bands(p);
  const QmmCut rows{-1, p.M};
  const QmmSpans spans = qmm_spans(p);
  ScratchLease a(device, spans.a), b(device, spans.b), columns(device, qmm_b_columns_bytes(p)), out(device, spans.out);
  QmmProblem there = p;
  there.a.data = a.data();
  there.b.data = b.data();
  there.out = out.data();

  // In: B, then A a band at a time where the bands' rows of A lie apart (A by rows), else all of A.
  const bool a_by_bands = p.a.row_stride >= p.K * p.a.col_stride;
  std::vector<CopySegment> in{{const_cast<void*>(p.b.data), b.data(), 0, spans.b}};
  std::vector<CopySegment> back;
  for (const SplitRange& r : bands) {
    const QmmProblem part = qmm_part(p, rows, r);
    if (a_by_bands) in.push_back({const_cast<void*>(part.a.data), a.data(), offset_of(part.a.data, p.a.data), qmm_spans(part).a});
    back.push_back({part.out, out.data(), offset_of(part.out, p.out), qmm_spans(part).out});
  }
  if (!a_by_bands) in.push_back({const_cast<void*>(p.a.data), a.data(), 0, spans.a});

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> landed(in.size(), false);
  std::size_t bands_done = 0;
  bool failed = false;
  // Waits until `ready` holds; false once any side failed (run_parts rethrows its error).
  const auto wait = [&](auto ready) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return failed || ready(); });
    return !failed;
  };
  const auto update = [&](auto change) {
    const std::lock_guard<std::mutex> lock(mutex);
    change();
    changed.notify_all();
  };
  const auto failing = [&](auto side) {
    return [&, side] {
      try {
        side();
      } catch (...) {
        update([&] { failed = true; });
        throw;
      }
    };
  };
  const auto copy_in = failing([&] { copy_segments_to_device(in, device, [&](std::size_t i) { update([&] { landed[i] = true; }); }); });
  const auto multiply = failing([&] {
    if (!wait([&] { return bool(landed[0]); })) return;
    qmm_offload_pack_b_columns(there, columns.data(), device);
    const QmmProblem with_columns = with_b_columns(there, columns.data());
    for (std::size_t i = 0; i < bands.size(); ++i) {
      const std::size_t rows_of_a = a_by_bands ? 1 + i : 1;
      if (!wait([&] { return bool(landed[rows_of_a]); })) return;
      run_qmm_offload_on_device(qmm_part(with_columns, rows, bands[i]), plan, device);
      update([&] { bands_done = i + 1; });
    }
  });
  const auto copy_back = failing([&] {
    // The copy's host threads wait from its start: begin it once there is something to copy.
    if (!wait([&] { return bands_done > 0; })) return;
    copy_segments_to_host(back, device, [&](std::size_t i) { return wait([&] { return bands_done > i; }); });
  });
  run_parts({copy_in, multiply, copy_back});
}

}  // namespace

void run_qmm_offload_host(const QmmProblem& problem, const QmmPlan& plan, int device) {
  if (offload_on_host() || !qmm_host_bands_apply(problem))
    run_qmm_offload(problem, plan, device);
  else
    run_in_bands(problem, plan, device);
}

}  // namespace hk::detail
