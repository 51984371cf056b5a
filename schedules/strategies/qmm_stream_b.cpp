// A part of a spread matmul on another device, fed B' a column group at a time (qmm_parts.hpp).
#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "runtime/platform/device_memory.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/strategies/qmm_parts.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t tile = qmm_offload_tile;

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Groups of whole tiles from a sixteenth of the columns, each twice as wide as the one before,
// the last taking what is left: the first group's copy, which nothing hides, is short, each later
// one crosses the link while the one before (half as wide) is multiplied, even where three
// devices share the home device's links, and there are few launches.
std::vector<SplitRange> column_groups(std::int64_t N) {
  std::vector<SplitRange> groups;
  std::int64_t width = std::max(tile, N / 16 / tile * tile);
  for (std::int64_t c = 0; c < N; width *= 2) {
    const std::int64_t end = N - (c + width) < width ? N : c + width;
    groups.push_back({c, end});
    c = end;
  }
  return groups;
}

// The last group's rows in two halves of whole tiles, when their output spans do not interleave:
// the first half's outputs then go back while the second half is multiplied.
std::vector<SplitRange> return_blocks(const QmmProblem& part) {
  const std::int64_t half = (part.M / 2 + tile - 1) / tile * tile;
  const std::vector<SplitRange> halves{{0, half}, {half, part.M}};
  if (half == 0 || half >= part.M || !qmm_parts_own_their_spans(part, {-1, part.M}, halves)) return {{0, part.M}};
  return halves;
}

}  // namespace

QmmProblem with_b_columns(const QmmProblem& p, const void* columns) {
  QmmProblem q = p;
  q.b = {DataType::int8, columns, {0, 0}, 1, p.K};
  if (p.b.dtype == DataType::uint8)
    for (std::int32_t& z : q.q.b_zero) z -= 128;
  return q;
}

bool is_b_columns(const MatrixView& b, std::int64_t K) {
  return b.dtype == DataType::int8 && b.row_stride == 1 && b.col_stride == K;
}

void multiply_part_streaming_b(const QmmProblem& part, const QmmPlan& launch, int home, int device,
                               std::chrono::steady_clock::time_point start, PartTimes& times) {
  times.device = device;
  times.rows = part.M;
  if (part.M == 0 || part.N == 0) return;
  const QmmSpans spans = qmm_spans(part);
  ScratchLease a(device, spans.a), b(device, std::size_t(part.N * part.K)), out(device, spans.out);
  QmmProblem there = part;
  there.a.data = a.data();
  there.b.data = b.data();
  there.out = out.data();
  const std::vector<SplitRange> groups = column_groups(part.N), blocks = return_blocks(part);
  // The products in order: every group on all rows, the last one a return block at a time.
  struct Step {
    std::size_t group;
    SplitRange rows;
  };
  std::vector<Step> steps;
  for (std::size_t g = 0; g + 1 < groups.size(); ++g) steps.push_back({g, {0, part.M}});
  for (const SplitRange& r : blocks) steps.push_back({groups.size() - 1, r});

  std::mutex mutex;
  std::condition_variable changed;
  std::size_t copied = 0, finished = 0;  // groups on `device`, steps done
  bool failed = false;
  const auto signal = [&](std::size_t& counter) {
    const std::lock_guard<std::mutex> lock(mutex);
    ++counter;
    changed.notify_all();
  };
  // Waits until `ready` holds; false when the other thread failed (run_parts rethrows its error).
  const auto wait = [&](const auto& ready) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return ready() || failed; });
    return !failed;
  };
  const auto guarded = [&](const auto& body) {
    return [&, body] {
      try {
        body();
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        failed = true;
        changed.notify_all();
        throw;
      }
    };
  };
  const auto copy = guarded([&] {
    times.copying = since(start);
    copy_between_devices(a.data(), device, part.a.data, home, spans.a);
    times.a_there = since(start);
    // Bytes between outputs must come back unchanged.
    if (spans.out_has_gaps()) copy_between_devices(out.data(), device, part.out, home, spans.out);
    for (const SplitRange& g : groups) {
      const std::size_t offset = std::size_t(g.begin * part.K);
      copy_between_devices(static_cast<char*>(b.data()) + offset, device, static_cast<const char*>(part.b.data) + offset,
                           home, std::size_t(g.size() * part.K));
      signal(copied);
    }
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (!wait([&] { return finished >= steps.size() - blocks.size() + i + 1; })) return;
      const QmmProblem rows = qmm_part(part, {-1, part.M}, blocks[i]);
      const std::size_t offset = std::size_t(static_cast<char*>(rows.out) - static_cast<char*>(part.out));
      copy_between_devices(rows.out, home, static_cast<char*>(out.data()) + offset, device, qmm_spans(rows).out);
    }
    times.done = since(start);
  });
  const auto multiply = guarded([&] {
    for (const Step& step : steps) {
      if (!wait([&] { return copied > step.group; })) return;
      if (times.inputs == 0) times.inputs = since(start);
      const double begun = since(start);
      run_qmm_offload_on_device(qmm_columns(qmm_part(there, {-1, part.M}, step.rows), groups[step.group]), launch,
                                device);
      times.products += since(start) - begun;
      signal(finished);
    }
    times.computed = since(start);
  });
  run_parts({multiply, copy});
}

}  // namespace hk::detail
