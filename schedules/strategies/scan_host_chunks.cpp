// A host-tensor scan on a GPU in chunks of lines (scan_host_chunks.hpp): one thread copies the
// chunks to the GPU in one staged copy, one scans each chunk once it has landed, one copies each
// scanned chunk back, all at once.
#include "schedules/strategies/scan_host_chunks.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <vector>

#include "algorithms/tensor_checks.hpp"
#include "hetkern/device.hpp"
#include "runtime/platform/device_memory.hpp"
#include "runtime/platform/environment.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/scan_line_parts.hpp"
#include "schedules/scan_offload.hpp"
#include "schedules/strategies/split_common.hpp"

namespace hk::detail {
namespace {

using i64 = std::int64_t;
// Below this many bytes (input and output together) the call is copied whole, as the matmul's
// bands do below the same size (qmm_host_bands.cpp).
constexpr i64 least_bytes = i64(32) << 20;
// About this many bytes of input a chunk: the copies' first and last chunks, which overlap
// nothing, then take about 0.3 ms each over a 55 GB/s link.
constexpr i64 chunk_bytes = i64(16) << 20;
constexpr i64 least_chunks = 4;

struct Chunks {
  CumulativeCall lines;  // the call as lines_call, cut along dimension 0
  std::vector<SplitRange> ranges;
};

// The chunks of a call, or none where it does not run in chunks.
Chunks chunks_of(const CumulativeCall& call) {
  const i64 in_bytes = byte_span(call.input.desc).hi, out_bytes = byte_span(call.output.desc).hi;
  if (call.input.desc.element_count() == 0 || (call.in_place() ? out_bytes : in_bytes + out_bytes) < least_bytes) return {};
  Chunks c{lines_call(call, make_scan_layout(call)), {}};
  const TensorDesc &in = c.lines.input.desc, &out = c.lines.output.desc;
  if (!parts_own_their_spans(in, 0) || !parts_own_their_spans(out, 0)) return {};
  const i64 step = in.stride(0) * i64(size_of(in.dtype()));
  const i64 per_chunk = std::max<i64>(1, chunk_bytes / std::max<i64>(1, step));
  if ((in.size(0) + per_chunk - 1) / per_chunk < least_chunks) return {};
  for (i64 b = 0; b < in.size(0); b += per_chunk) c.ranges.push_back({b, std::min(in.size(0), b + per_chunk)});
  return c;
}

void run_in_chunks(const CumulativeCall& call, const ScanPlan& plan, int device, const Chunks& c) {
  const std::size_t out_bytes = std::size_t(byte_span(call.output.desc).hi);
  ScratchLease out(device, out_bytes);
  std::optional<ScratchLease> in;
  if (!call.in_place()) in.emplace(device, std::size_t(byte_span(call.input.desc).hi));
  CumulativeCall there = c.lines;
  there.output.data = out.data();
  there.input.data = in ? in->data() : out.data();
  // In: each chunk's input span, then its output span where the output has gaps between its
  // elements (they must come back unchanged); back: each chunk's output span.
  const bool gaps = !call.in_place() && !call.output.desc.is_packed();
  const std::size_t per = gaps ? 2 : 1;
  std::vector<CopySegment> to_device, to_host;
  for (const SplitRange& r : c.ranges) {
    const CumulativeCall part = part_of(c.lines, 0, r);
    const std::size_t in_at = byte_offset(part.input.data, call.input.data), out_at = byte_offset(part.output.data, call.output.data);
    const std::size_t part_out = std::size_t(byte_span(part.output.desc).hi);
    to_device.push_back({const_cast<void*>(part.input.data), in ? in->data() : out.data(), in_at,
                         std::size_t(byte_span(part.input.desc).hi)});
    if (gaps) to_device.push_back({part.output.data, out.data(), out_at, part_out});
    to_host.push_back({part.output.data, out.data(), out_at, part_out});
  }

  const auto start = std::chrono::steady_clock::now();
  const auto now = [&] { return 1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::mutex mutex;
  std::condition_variable changed;
  // Segments landed per chunk: with two threads on the link, a chunk can land before the one
  // before it has.
  std::vector<std::size_t> landed(c.ranges.size(), 0);
  std::size_t chunks_landed = 0, scanned = 0;
  bool failed = false;
  double first_in = 0, all_in = 0, all_scanned = 0, all_back = 0;
  const auto update = [&](auto change) {
    const std::lock_guard<std::mutex> lock(mutex);
    change();
    changed.notify_all();
  };
  // Waits for `done`; false once another side failed.
  const auto wait = [&](auto done) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return failed || done(); });
    return !failed;
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
  const auto copy_in = failing([&] {
    copy_segments_to_device(to_device, device, [&](std::size_t i) {
      update([&] {
        if (++landed[i / per] < per) return;
        if (++chunks_landed == 1) first_in = now();
        if (chunks_landed == c.ranges.size()) all_in = now();
      });
    });
  });
  const auto scan = failing([&] {
    for (std::size_t k = 0; k < c.ranges.size(); ++k) {
      if (!wait([&] { return landed[k] == per; })) return;
      run_scan_offload(part_of(there, 0, c.ranges[k]), plan, device);
      update([&] {
        scanned = k + 1;
        if (scanned == c.ranges.size()) all_scanned = now();
      });
    }
  });
  const auto copy_back = failing([&] {
    // The copy's host threads wait from its start: begin it once there is something to copy.
    if (!wait([&] { return scanned > 0; })) return;
    copy_segments_to_host(to_host, device, [&](std::size_t k) { return wait([&] { return scanned > k; }); });
    all_back = now();
  });
  run_parts({copy_in, scan, copy_back});
  if (log_requested("devices"))
    std::fprintf(stderr,
                 "hetkern: devices GPU %d: host tensors in %zu chunks of lines: a first chunk there at %.3f ms, all "
                 "at %.3f ms, all scanned at %.3f ms, all back at %.3f ms\n",
                 device, c.ranges.size(), first_in, all_in, all_scanned, all_back);
}

}  // namespace

std::int64_t scan_host_chunks(const CumulativeCall& call) { return std::int64_t(chunks_of(call).ranges.size()); }

void run_scan_offload_host_chunked(const CumulativeCall& call, const ScanPlan& plan, int device) {
  if (offload_on_host()) {
    run_scan_offload_host(call, plan, device);
    return;
  }
  const Chunks c = chunks_of(call);
  if (c.ranges.empty())
    run_scan_offload_host(call, plan, device);
  else
    run_in_chunks(call, plan, device, c);
}

}  // namespace hk::detail
