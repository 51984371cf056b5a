// A host-tensor matmul on a GPU as one launch fed and drained while it runs (qmm_host_bands.hpp):
// B and then A, a group of tile rows at a time, cross the link in one staged copy; the product's
// tiles wait on the device for their rows of A where A is read in place (else the launch waits
// for all of A), and each band of outputs goes back as soon as the launch counts it finished.
#include "schedules/strategies/qmm_host_bands.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "hetkern/device.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/environment.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/strategies/qmm_parts.hpp"
#include "schedules/strategies/split_common.hpp"

namespace hk::detail {
namespace {

using i64 = std::int64_t;
constexpr i64 tile = qmm_offload_tile;
// Below this many bytes (A, B and the output together) the plain copies win: on the H100
// machine 12 and 17 MiB calls (2048^3, 8192 x 1024 x 1024) took 1.04-1.5 ms in bands against
// 0.94-1.21 ms copied whole, and from 48 MiB on the bands win (docs/performance.md).
constexpr std::size_t least_bytes = std::size_t(32) << 20;
// A crosses in groups of whole tile rows, this many at most, and its outputs come back in bands of
// as many rows (and the last tile row alone): the first tiles start after B and the first group
// only, and what goes back after the last group lands is one group's outputs.
constexpr i64 most_groups = 8;

// Tile rows per group of A and per band of outputs.
i64 group_rows(i64 M) { return (qmm_offload_tiles_of(M) + most_groups - 1) / most_groups; }

std::vector<SplitRange> a_row_groups(i64 M) {
  const i64 tiles = qmm_offload_tiles_of(M), per_group = group_rows(M);
  std::vector<SplitRange> groups;
  for (i64 t = 0; t < tiles; t += per_group) groups.push_back({t * tile, std::min(M, (t + per_group) * tile)});
  return groups;
}

void run_in_bands(const QmmProblem& p, const QmmPlan& plan, int device) {
  const QmmCut rows{-1, p.M};
  const std::vector<SplitRange> bands = qmm_arrival_bands(p.M, group_rows(p.M));
  const QmmSpans spans = qmm_spans(p);
  const i64 tiles_m = qmm_offload_tiles_of(p.M), tiles_n = qmm_offload_tiles_of(p.N);
  ScratchLease a(device, spans.a), b(device, spans.b), out(device, spans.out);
  ScratchLease flags(device, std::size_t(tiles_m + i64(bands.size())) * sizeof(std::int32_t));
  QmmProblem there = p;
  there.a.data = a.data();
  there.b.data = b.data();
  there.out = out.data();
  auto* const a_ready = static_cast<std::int32_t*>(flags.data());
  auto* const bands_done = a_ready + tiles_m;
  const std::vector<std::int32_t> zeros(std::size_t(tiles_m) + bands.size(), 0), ones(std::size_t(tiles_m), 1);
  copy_to_device(flags.data(), 0, zeros.data(), zeros.size() * sizeof(std::int32_t), device);
  const auto mark_ready = [&](i64 first, i64 count) {
    copy_to_device(a_ready, std::size_t(first) * sizeof(std::int32_t), ones.data(), std::size_t(count) * sizeof(std::int32_t),
                   device);
  };

  // In: B, then A a group of tile rows at a time where the groups' rows lie apart (A by rows),
  // else all of A. The launch waits on the device for A's rows only where it reads A in place.
  const bool a_by_rows = p.a.row_stride >= p.K * p.a.col_stride;
  const bool a_arriving = a_by_rows && qmm_offload_streamable(there, plan.kernel, device).a;
  const std::vector<SplitRange> a_groups = a_by_rows ? a_row_groups(p.M) : std::vector<SplitRange>{{0, p.M}};
  std::vector<CopySegment> in{{const_cast<void*>(p.b.data), b.data(), 0, spans.b}};
  for (const SplitRange& r : a_groups) {
    const QmmProblem part = qmm_part(p, rows, r);
    in.push_back({const_cast<void*>(part.a.data), a.data(), byte_offset(part.a.data, p.a.data), qmm_spans(part).a});
  }
  std::vector<CopySegment> back;
  for (const SplitRange& r : bands) {
    const QmmProblem part = qmm_part(p, rows, r);
    back.push_back({part.out, out.data(), byte_offset(part.out, p.out), qmm_spans(part).out});
  }

  // HETKERN_LOG=devices: when each step ended, in ms from the start.
  const auto start = std::chrono::steady_clock::now();
  const auto now = [&] { return 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  double b_there = 0, a_there = 0, launched_at = 0, computed_at = 0, first_back = 0, all_back = 0;
  std::mutex mutex;
  std::condition_variable changed;
  // Segments of `in` all there: with two threads on the link a later segment may land first.
  std::vector<bool> there_in(in.size(), false);
  std::size_t landed = 0;
  std::size_t bands_back = 0;  // bands counted finished
  bool launched = false, finished = false, failed = false;
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
  const auto is = [&](const bool& flag) {
    const std::lock_guard<std::mutex> lock(mutex);
    return flag;
  };
  // On any failure a launch that waits for A's rows is released (every row marked there), so that
  // it ends; `launched` and `failed` change under one lock, so that no launch starts unreleased.
  const auto failing = [&](auto side) {
    return [&, side] {
      try {
        side();
      } catch (...) {
        bool release = false;
        update([&] { failed = true, release = a_arriving && launched; });
        if (release) try {
            mark_ready(0, tiles_m);
          } catch (...) {
          }
        throw;
      }
    };
  };
  const auto copy_in = failing([&] {
    // landed runs inside the copy's threads, which must not throw: a failure is kept for here.
    std::exception_ptr marking;
    copy_segments_to_device(in, device, [&](std::size_t i) {
      if (a_arriving && i > 0) try {
          const SplitRange& r = a_groups[i - 1];
          mark_ready(r.begin / tile, qmm_offload_tiles_of(r.end) - r.begin / tile);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(mutex);
          if (!marking) marking = std::current_exception();
        }
      update([&] {
        there_in[i] = true;
        ++landed;
        if (i == 0) b_there = now();
        if (landed == in.size()) a_there = now();
      });
    });
    if (marking) std::rethrow_exception(marking);
  });
  const auto multiply = failing([&] {
    {
      std::unique_lock<std::mutex> lock(mutex);
      // B, and A too unless the launch waits for its rows on the device.
      changed.wait(lock, [&] { return failed || (a_arriving ? bool(there_in[0]) : landed == in.size()); });
      if (failed) return;
      launched = true;
      launched_at = now();
    }
    run_qmm_offload_arriving(there, plan, device, {a_arriving ? a_ready : nullptr, nullptr, bands_done, 1, group_rows(p.M)});
    update([&] {
      finished = true;
      computed_at = now();
    });
  });
  const auto watch = failing([&] {
    for (std::size_t i = 0; i < bands.size(); ++i) {
      if (!wait_for_band(device, bands_done, i, std::int32_t(qmm_offload_tiles_of(bands[i].size()) * tiles_n), [&] { return is(failed); },
                         [&] { return is(finished); }))
        return;
      update([&] { bands_back = i + 1; });
    }
  });
  const auto copy_back = failing([&] {
    // The copy's host threads wait from its start: begin it once there is something to copy.
    if (!wait([&] { return bands_back > 0; })) return;
    first_back = now();
    copy_segments_to_host(back, device, [&](std::size_t i) { return wait([&] { return bands_back > i; }); });
    all_back = now();
  });
  run_parts({copy_in, multiply, watch, copy_back});
  if (log_requested("devices"))
    std::fprintf(stderr,
                 "hetkern: devices GPU %d: host tensors in bands (%zu of A in, %zu of outputs back, A %s): B there "
                 "at %.3f ms, A at %.3f ms, launched at %.3f ms, products done at %.3f ms, first band back from "
                 "%.3f ms, all back at %.3f ms\n",
                 device, a_groups.size(), bands.size(), a_arriving ? "read as it arrives" : "whole before the launch",
                 b_there, a_there, launched_at, computed_at, first_back, all_back);
}

}  // namespace

bool qmm_host_bands_apply(const QmmProblem& p) {
  if (p.packed_b || p.batch[0] * p.batch[1] != 1 || p.M <= tile || p.N == 0 || p.K == 0) return false;
  const QmmSpans spans = qmm_spans(p);
  return !spans.out_has_gaps() && spans.a + spans.b + spans.out >= least_bytes &&
         qmm_parts_own_their_spans(p, {-1, p.M}, qmm_arrival_bands(p.M, group_rows(p.M)));
}

void run_qmm_offload_host(const QmmProblem& problem, const QmmPlan& plan, int device) {
  if (offload_on_host() || !qmm_host_bands_apply(problem))
    run_qmm_offload(problem, plan, device);
  else
    run_in_bands(problem, plan, device);
}

}  // namespace hk::detail
