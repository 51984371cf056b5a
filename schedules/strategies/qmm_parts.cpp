// Parts of one QuantizedLinearMatMul, and running them on a device other than their data's.
#include "schedules/strategies/qmm_parts.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "hetkern/error.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/environment.hpp"
#include "schedules/qmm_offload.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/strategies/qmm_host_bands.hpp"

namespace hk::detail {
namespace {

// A per-row (or per-column) parameter's rows [r.begin, r.end); one value shared by all stays as it is.
template <class T> std::vector<T> param_rows(const std::vector<T>& v, SplitRange r) {
  if (v.size() == 1) return v;
  return {v.begin() + r.begin, v.begin() + r.end};
}

// Rows [r.begin, r.end) of A, and of the output, in every batch matrix.
QmmProblem rows_of(const QmmProblem& p, SplitRange r) {
  QmmProblem part = p;
  part.M = r.size();
  // A and the output hold one-byte elements.
  part.a.data = static_cast<const char*>(p.a.data) + r.begin * p.a.row_stride;
  part.out = static_cast<char*>(p.out) + r.begin * p.out_row_stride;
  part.q.a_scale = param_rows(p.q.a_scale, r);
  part.q.a_zero = param_rows(p.q.a_zero, r);
  part.q.out_scale = param_rows(p.q.out_scale, r);
  part.q.out_zero = param_rows(p.q.out_zero, r);
  return part;
}

// Matrices [r.begin, r.end) of batch dimension `dim`.
QmmProblem batches_of(const QmmProblem& p, int dim, SplitRange r) {
  QmmProblem part = p;
  part.batch[dim] = r.size();
  part.a.data = static_cast<const char*>(p.a.data) + r.begin * p.a.batch_stride[dim];
  part.b.data = static_cast<const char*>(p.b.data) + r.begin * p.b.batch_stride[dim];
  part.out = static_cast<char*>(p.out) + r.begin * p.out_batch_stride[dim];
  return part;
}

}  // namespace

QmmCut qmm_cut(const QmmProblem& p, int parts) {
  const int outer = p.batch[0] > 1 ? 0 : 1;
  if (p.batch[outer] > 1 && p.batch[outer] >= parts) return {outer, p.batch[outer]};
  return {-1, p.M};
}

std::vector<SplitRange> qmm_spread_ranges(const QmmCut& cut, int devices, int home_share,
                                          const std::vector<double>& others) {
  if (cut.by_batch()) return spread_ranges(cut.units, devices, home_share, others);
  constexpr std::int64_t tile = qmm_offload_tile;
  std::vector<SplitRange> ranges = spread_ranges(qmm_offload_tiles_of(cut.units), devices, home_share, others);
  for (SplitRange& r : ranges) r = {std::min(r.begin * tile, cut.units), std::min(r.end * tile, cut.units)};
  return ranges;
}

QmmProblem qmm_columns(const QmmProblem& p, SplitRange r) {
  QmmProblem part = p;
  part.N = r.size();
  part.b.data = static_cast<const char*>(p.b.data) + r.begin * p.b.col_stride;
  part.out = static_cast<char*>(p.out) + r.begin * p.out_col_stride;
  part.q.b_scale = param_rows(p.q.b_scale, r);
  part.q.b_zero = param_rows(p.q.b_zero, r);
  return part;
}

QmmProblem qmm_part(const QmmProblem& p, const QmmCut& cut, SplitRange r) {
  return cut.by_batch() ? batches_of(p, cut.batch_dim, r) : rows_of(p, r);
}

std::vector<SplitRange> qmm_arrival_bands(std::int64_t M, std::int64_t band_rows, std::int64_t last_rows) {
  constexpr std::int64_t tile = qmm_offload_tile;
  const std::int64_t band = tile * band_rows;
  const std::int64_t last = std::min(M, std::max<std::int64_t>(0, qmm_offload_tiles_of(M) - last_rows) * tile);
  std::vector<SplitRange> bands;
  for (std::int64_t r = 0; r < last; r += band) bands.push_back({r, std::min(last, r + band)});
  if (last < M || bands.empty()) bands.push_back({last, M});
  return bands;
}

bool wait_for_band(int device, const std::int32_t* bands_done, std::size_t band, std::int32_t expected,
                   const std::function<bool()>& stop, const std::function<bool()>& launch_ended) {
  for (std::int32_t done = 0; done < expected;) {
    if (stop()) return false;
    const bool ended = launch_ended();
    copy_to_host(&done, bands_done, band * sizeof(std::int32_t), sizeof(done), device);
    if (done < expected && ended)
      throw Error(Errc::unavailable, "quantized_linear_matmul", "GPU " + std::to_string(device),
                  "its launch ended with " + std::to_string(done) + " of band " + std::to_string(band) + "'s " +
                      std::to_string(expected) + " tiles counted");
    if (done < expected) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}

bool qmm_parts_own_their_spans(const QmmProblem& p, const QmmCut& cut, const std::vector<SplitRange>& ranges) {
  // Ranges come in address order (strides are non-negative): each span must end before the next begins.
  const char* previous_end = nullptr;
  for (const SplitRange& r : ranges) {
    if (r.size() == 0) continue;
    const QmmProblem part = qmm_part(p, cut, r);
    if (part.N == 0) return true;
    const char* begin = static_cast<const char*>(part.out);
    if (previous_end && begin < previous_end) return false;
    previous_end = begin + qmm_spans(part).out;
  }
  return true;
}

void multiply_host_rows_on_device(const QmmProblem& problem, SplitRange r, const QmmPlan& plan, int device) {
  QmmProblem part = rows_of(problem, r);
  // One matrix whose rows do not interleave: the span of the part's outputs holds only its own.
  if (problem.batch[0] * problem.batch[1] == 1 && (problem.N - 1) * problem.out_col_stride < problem.out_row_stride) {
    run_qmm_offload_host(part, plan, device);
    return;
  }
  const std::int64_t batches = problem.batch[0] * problem.batch[1], count = r.size(), N = problem.N;
  std::vector<std::uint8_t> packed(std::size_t(batches * count * N));
  char* const out = static_cast<char*>(part.out);
  part.out = packed.data();
  part.out_batch_stride[0] = problem.batch[1] * count * N;
  part.out_batch_stride[1] = count * N;
  part.out_row_stride = N;
  part.out_col_stride = 1;
  run_qmm_offload_host(part, plan, device);
  for (std::int64_t t = 0; t < batches; ++t) {
    const std::int64_t batch_offset =
        (t / problem.batch[1]) * problem.out_batch_stride[0] + (t % problem.batch[1]) * problem.out_batch_stride[1];
    for (std::int64_t m = 0; m < count; ++m)
      for (std::int64_t n = 0; n < N; ++n)
        out[batch_offset + m * problem.out_row_stride + n * problem.out_col_stride] =
            char(packed[std::size_t((t * count + m) * N + n)]);
  }
}

void multiply_part_on_other_device(const QmmProblem& part, const QmmPlan& launch, int home, int device,
                                   const DeviceB* kept) {
  if (part.M == 0 || part.N == 0 || part.batch[0] * part.batch[1] == 0) return;
  const QmmSpans spans = qmm_spans(part);
  ScratchLease a(device, spans.a), out(device, spans.out);
  std::optional<ScratchLease> b;
  copy_between_devices(a.data(), device, part.a.data, home, spans.a);
  if (!kept) {
    b.emplace(device, spans.b);
    copy_between_devices(b->data(), device, part.b.data, home, spans.b);
  }
  // Bytes between outputs must come back unchanged.
  if (spans.out_has_gaps()) copy_between_devices(out.data(), device, part.out, home, spans.out);
  QmmProblem there = part;
  there.a.data = a.data();
  there.b.data = kept ? kept->on(device) : b->data();
  there.out = out.data();
  run_qmm_offload_on_device(there, launch, device);
  copy_between_devices(part.out, home, out.data(), device, spans.out);
}

void spread_qmm(const QmmProblem& problem, const PartLaunch& launch, const std::vector<int>& devices, int home_share,
                const DeviceB* kept) {
  if (problem.M == 0 || problem.N == 0 || problem.batch[0] * problem.batch[1] == 0) return;
  const int home = devices[0];
  const QmmCut cut = qmm_cut(problem, int(devices.size()));
  const std::vector<SplitRange> ranges =
      qmm_spread_ranges(cut, int(devices.size()), home_share, other_devices_speeds(devices, SpreadWork::matmul));
  if (devices.size() == 1 || !qmm_parts_own_their_spans(problem, cut, ranges)) {
    run_qmm_offload_on_device(problem, launch(problem), home);
    return;
  }
  // One matrix cut by rows: B' is packed once on the home device (unless B already is B'), which
  // reads it in place, and streamed to the others, which then neither wait for all of B nor pack it.
  const bool streams_b = !cut.by_batch() && qmm_b_columns_fit(problem);
  const bool packs_b = streams_b && !is_b_columns(problem.b, problem.K);
  // B's column sums, where the products need them and B' is not kept: made once here (by the
  // packing launch where B is packed) and copied to each other device ahead of B', whose tiles
  // would otherwise sum each column group of B' as it lands, slowing the products that wait for
  // it (docs/gpu.md, several GPUs on one call).
  const bool sums_made = streams_b && !kept && qmm_sums_needed(problem).columns &&
                         (packs_b || reinterpret_cast<std::uintptr_t>(problem.b.data) % 16 == 0);
  std::optional<ScratchLease> column_sums;
  if (sums_made) column_sums.emplace(home, std::size_t(problem.N) * sizeof(std::int64_t));
  auto* const sums = column_sums ? static_cast<std::int64_t*>(column_sums->data()) : nullptr;
  std::optional<ScratchLease> b_columns;
  if (packs_b) {
    b_columns.emplace(home, qmm_b_columns_bytes(problem));
    qmm_offload_pack_b_columns(problem, b_columns->data(), home, sums);
  } else if (sums)
    qmm_offload_column_sums(problem, sums, home);
  const QmmProblem whole = packs_b ? with_b_columns(problem, b_columns->data()) : problem;
  std::optional<ColumnRelay> relay;
  // Each other device's B', held until every part has returned: the next device copies from it.
  std::vector<std::unique_ptr<ScratchLease>> columns;
  if (streams_b) relay.emplace(home, whole.b.data, whole.N, whole.K);
  const auto start = std::chrono::steady_clock::now();
  std::vector<PartTimes> times(devices.size());
  std::vector<std::function<void()>> parts;
  for (std::size_t i = 1; i < devices.size(); ++i) {
    if (ranges[i].size() == 0) continue;
    const QmmProblem part = qmm_part(whole, cut, ranges[i]);
    if (streams_b) {
      // A kept B' is on every device already (a first call for a device copies it there now).
      void* const there = kept ? const_cast<void*>(kept->on(devices[i]))
                               : columns.emplace_back(std::make_unique<ScratchLease>(devices[i], std::size_t(part.N * part.K)))->data();
      parts.push_back([part, launch = launch(part), &relay, link = relay->add(devices[i], there, kept != nullptr), sums,
                       start, &t = times[i]] { multiply_part_streaming_b(part, launch, *relay, link, sums, start, t); });
    } else
      parts.push_back([part, launch = launch(part), home, device = devices[i], kept] {
        multiply_part_on_other_device(part, launch, home, device, kept);
      });
  }
  // The home device's part last: run_parts runs the first part on this thread and wakes kept
  // threads for the others in order, and the other devices, which wait for their operands, have
  // less time to lose.
  if (ranges[0].size() > 0) {
    const QmmProblem part = qmm_part(whole, cut, ranges[0]);
    parts.push_back([part, launch = launch(part), home, sums, start, &t = times[0]] {
      t = {home, part.M, 0, 0, 0, 0, 0, 0, 0, 0};
      OffloadQmmArrivals given;
      given.column_sums = sums;
      run_qmm_offload_arriving(part, launch, home, given);
      t.products = t.computed = t.done = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
  }
  run_parts(
      parts, [&] {
        if (relay) relay->fail();
      },
      AfterPart::linger);
  if (streams_b && log_requested("devices"))
    for (const PartTimes& t : times)
      if (t.rows > 0)
        std::fprintf(stderr,
                     "hetkern: devices GPU %d: %lld rows, begun at %.3f ms, copies from %.3f ms, launched at %.3f "
                     "ms, B' there at %.3f ms, A there at %.3f ms, products %.3f ms, done at %.3f ms, outputs back "
                     "at %.3f ms\n",
                     t.device, static_cast<long long>(t.rows), 1e3 * t.begun, 1e3 * t.copying, 1e3 * t.inputs,
                     1e3 * t.b_there, 1e3 * t.a_there, 1e3 * t.products, 1e3 * t.computed, 1e3 * t.done);
}

}  // namespace hk::detail
