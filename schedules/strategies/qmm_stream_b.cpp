// A part of a spread matmul on another device, fed A and B' while its one launch already runs
// (qmm_parts.hpp).
#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "runtime/platform/device_memory.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/strategies/qmm_parts.hpp"

namespace hk::detail {
namespace {

constexpr std::int64_t tile = qmm_offload_tile;

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Groups of whole tiles, equal but for the last: a sixteenth of the columns, at most 16 MiB of B',
// so that each link passes a group on soon after it lands (its copy takes 0.04 ms at 390 GB/s)
// and B' keeps ahead of the products, which need a sixteenth of the columns about every 0.1 ms.
std::vector<SplitRange> column_groups(std::int64_t N, std::int64_t K) {
  constexpr std::int64_t most_bytes = std::int64_t(16) << 20;
  const std::int64_t width = std::max(tile, std::min(N / 16, most_bytes / K) / tile * tile);
  std::vector<SplitRange> groups;
  for (std::int64_t c = 0; c < N; c += width) groups.push_back({c, std::min(N, c + width)});
  return groups;
}

}  // namespace

ColumnRelay::ColumnRelay(int home, const void* columns, std::int64_t N, std::int64_t K) : groups_(column_groups(N, K)) {
  // The home device's B' is only read.
  links_.push_back({home, static_cast<char*>(const_cast<void*>(columns)), std::vector<bool>(groups_.size(), true), true});
}

std::size_t ColumnRelay::add(int device, void* columns, bool there) {
  links_.push_back({device, static_cast<char*>(columns), std::vector<bool>(groups_.size(), there), there});
  return links_.size() - 1;
}

void ColumnRelay::landed(std::size_t link, std::size_t group) {
  const std::lock_guard<std::mutex> lock(mutex_);
  links_[link].there[group] = true;
  changed_.notify_all();
}

std::optional<ColumnRelay::Source> ColumnRelay::source(std::size_t link, std::size_t group) {
  std::unique_lock<std::mutex> lock(mutex_);
  // The first group, which every link's first tiles wait for, from the home device itself.
  const Link& from = links_[group == 0 ? 0 : link - 1];
  changed_.wait(lock, [&] { return from.there[group] || failed_; });
  if (failed_) return std::nullopt;
  return Source{from.device, from.columns};
}

void ColumnRelay::fail() {
  const std::lock_guard<std::mutex> lock(mutex_);
  failed_ = true;
  changed_.notify_all();
}

bool ColumnRelay::failed() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}

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

namespace {

void stream_part(const QmmProblem& part, const QmmPlan& launch, ColumnRelay& relay, std::size_t link,
                 const std::int64_t* home_column_sums, std::chrono::steady_clock::time_point start, PartTimes& times) {
  times.begun = since(start);
  const int home = relay.home(), device = relay.device(link);
  times.device = device;
  times.rows = part.M;
  const QmmSpans spans = qmm_spans(part);
  const std::int64_t tiles_m = qmm_offload_tiles_of(part.M), tiles_n = qmm_offload_tiles_of(part.N);
  const std::vector<SplitRange> bands = qmm_arrival_bands(part.M, qmm_offload_band_rows, qmm_stream_last_rows);
  ScratchLease a(device, spans.a), out(device, spans.out);
  ScratchLease flags(device, std::size_t(tiles_m + tiles_n + std::int64_t(bands.size())) * sizeof(std::int32_t));
  const std::size_t sums_bytes = std::size_t(part.N) * sizeof(std::int64_t);
  std::optional<ScratchLease> column_sums;
  if (home_column_sums) column_sums.emplace(device, sums_bytes);
  char* const b = relay.columns(link);
  QmmProblem there = part;
  there.a.data = a.data();
  there.b.data = b;
  there.out = out.data();

  // The flags: a_ready per row tile, b_ready per column tile, bands_done per band.
  auto* const a_ready = static_cast<std::int32_t*>(flags.data());
  auto* const b_ready = a_ready + tiles_m;
  auto* const bands_done = b_ready + tiles_n;
  // B' kept on the device across calls is all there: its flags start set.
  const bool b_kept = relay.kept(link);
  std::vector<std::int32_t> initial(tiles_m + tiles_n + bands.size(), 0);
  if (b_kept) std::fill(initial.begin() + tiles_m, initial.begin() + tiles_m + tiles_n, 1);
  const std::vector<std::int32_t> ones(std::max(tiles_m, tiles_n), 1);
  copy_to_device(a_ready, 0, initial.data(), initial.size() * sizeof(std::int32_t), device);
  const auto mark = [&](std::int32_t* ready, std::int64_t first, std::int64_t count) {
    copy_to_device(ready, std::size_t(first) * sizeof(std::int32_t), ones.data(), std::size_t(count) * sizeof(std::int32_t),
                   device);
  };
  const OffloadQmmStreamable streamable = qmm_offload_streamable(there, launch.kernel, device);
  const bool by_bands = bands.size() > 1 && qmm_parts_own_their_spans(part, {-1, part.M}, bands);
  const bool a_rows_apart = part.a.row_stride >= part.K * part.a.col_stride;
  OffloadQmmArrivals arrivals{streamable.a ? a_ready : nullptr, streamable.b ? b_ready : nullptr,
                              by_bands ? bands_done : nullptr, qmm_stream_last_rows};
  if (column_sums) arrivals.column_sums = static_cast<const std::int64_t*>(column_sums->data());

  std::mutex mutex;
  std::condition_variable changed;
  bool launchable = false, finished = false, failed = false;
  const auto set = [&](bool& flag) {
    const std::lock_guard<std::mutex> lock(mutex);
    flag = true;
    changed.notify_all();
  };
  // Waits until `flag` is set; false when the other thread failed (run_parts rethrows its error).
  const auto wait = [&](const bool& flag) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return flag || failed; });
    return !failed;
  };
  const auto has_failed = [&] {
    const std::lock_guard<std::mutex> lock(mutex);
    return failed || relay.failed();
  };
  const auto is_set = [&](const bool& flag) {
    const std::lock_guard<std::mutex> lock(mutex);
    return flag;
  };
  // On any failure every flag is set, so that a launch that waits for its operands ends.
  const auto release = [&] {
    set(failed);
    relay.fail();
    try {
      mark(a_ready, 0, tiles_m);
      mark(b_ready, 0, tiles_n);
    } catch (...) {
    }
  };

  const auto copy = [&] {
    try {
      times.copying = since(start);
      // Bytes between outputs must come back unchanged: they are there before the launch writes.
      if (spans.out_has_gaps()) copy_between_devices(out.data(), device, part.out, home, spans.out);
      const auto copy_a = [&](const SplitRange& rows) {
        const QmmProblem p = qmm_part(part, {-1, part.M}, rows);
        const std::size_t offset = byte_offset(p.a.data, part.a.data);
        copy_between_devices(static_cast<char*>(a.data()) + offset, device, p.a.data, home, qmm_spans(p).a);
        mark(a_ready, rows.begin / tile, qmm_offload_tiles_of(rows.end) - rows.begin / tile);
        times.a_there = since(start);  // the pieces go in order: the last one's time is all of A's
      };
      // A band at a time where the bands' rows of A lie apart (A by rows); else (A by columns,
      // where each band's span holds nearly all of A) all of A at once.
      std::vector<SplitRange> a_pieces = bands;
      if (!a_rows_apart) a_pieces = {{0, part.M}};
      const auto copy_b = [&](std::size_t g) {
        const std::optional<ColumnRelay::Source> from = relay.source(link, g);
        if (!from) return false;
        const SplitRange columns = relay.group(g);
        const std::size_t offset = std::size_t(columns.begin * part.K);
        copy_between_devices(b + offset, device, from->columns + offset, from->device, std::size_t(columns.size() * part.K));
        mark(b_ready, columns.begin / tile, qmm_offload_tiles_of(columns.end) - columns.begin / tile);
        relay.landed(link, g);
        return true;
      };
      // The launch starts as soon as what its tiles cannot wait for themselves is there: at once
      // when they can wait for both operands, since a launch takes longer than a copy to start.
      // The first band's rows of A and the first group of B' come first: the first tiles need only
      // those. Then the rest of B', which the first band's tiles need group after group, before
      // the other bands of A, which only the later bands need (unless the product sums A first):
      // the home device's links out carry every device's A too.
      if (column_sums) copy_between_devices(column_sums->data(), device, home_column_sums, home, sums_bytes);
      if (streamable.a && streamable.b) set(launchable);
      copy_a(a_pieces[0]);
      if (!b_kept && !copy_b(0)) return release();
      const auto copy_rest_of_a = [&] {
        for (std::size_t r = 1; r < a_pieces.size(); ++r) copy_a(a_pieces[r]);
      };
      if (!streamable.a) copy_rest_of_a();
      if (streamable.b) set(launchable);
      // The rest of B' by two threads, odd and even groups: each copy is synchronous and then
      // marked, and one thread alone left the link idle about half the time.
      bool all_copied = true;
      const auto every_other_group = [&](std::size_t first) {
        return [&, first] {
          for (std::size_t g = first; g < relay.groups(); g += 2)
            if (!copy_b(g)) {
              const std::lock_guard<std::mutex> lock(mutex);
              all_copied = false;
              return;
            }
        };
      };
      if (!b_kept) run_parts({every_other_group(1), every_other_group(2)}, {}, AfterPart::linger);
      if (!all_copied) return release();
      times.b_there = since(start);
      set(launchable);
      if (streamable.a) copy_rest_of_a();
      // The outputs back, a band at a time as its tiles are counted, or all once the launch is done.
      const auto send_back = [&](const SplitRange& rows) {
        const QmmProblem p = qmm_part(part, {-1, part.M}, rows);
        const std::size_t offset = byte_offset(p.out, part.out);
        copy_between_devices(p.out, home, static_cast<char*>(out.data()) + offset, device, qmm_spans(p).out);
      };
      if (!by_bands) {
        if (wait(finished)) send_back({0, part.M});
      } else
        for (std::size_t i = 0; i < bands.size(); ++i) {
          if (!wait_for_band(device, bands_done, i, std::int32_t(qmm_offload_tiles_of(bands[i].size()) * tiles_n), has_failed,
                             [&] { return is_set(finished); }))
            return;
          send_back(bands[i]);
        }
      times.done = since(start);
    } catch (...) {
      release();
      throw;
    }
  };
  const auto multiply = [&] {
    try {
      if (!wait(launchable)) return;
      times.inputs = since(start);
      run_qmm_offload_arriving(there, launch, device, arrivals);
      times.computed = since(start);
      times.products = times.computed - times.inputs;
      set(finished);
    } catch (...) {
      set(failed);
      relay.fail();
      throw;
    }
  };
  // The copies on this thread, which starts them at once; the launch can wait for a kept thread.
  run_parts({copy, multiply}, {}, AfterPart::linger);
}

}  // namespace

void multiply_part_streaming_b(const QmmProblem& part, const QmmPlan& launch, ColumnRelay& relay, std::size_t link,
                               const std::int64_t* home_column_sums, std::chrono::steady_clock::time_point start,
                               PartTimes& times) {
  try {
    stream_part(part, launch, relay, link, home_column_sums, start, times);
  } catch (...) {
    relay.fail();
    throw;
  }
}

}  // namespace hk::detail
