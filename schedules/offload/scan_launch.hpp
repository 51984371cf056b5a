// The three kernel families of the offload scans, as the dispatch (scan_offload.cpp) sees them:
// each launches its kernels for a validated call on `device` and fills its strategy's defaults.
// `carry`, where given, is what every line continues from (line_start_value), and the fold of a
// line gives the carry of what follows it: a line cut into parts, each on its own device.
#pragma once

#include <cstdint>

#include "algorithms/cumulative.hpp"
#include "algorithms/scan_types.hpp"
#include "hetkern/error.hpp"
#include "schedules/scan_layout.hpp"
#include "schedules/scan_offload_plan.hpp"

namespace hk::detail::offload::scan {

/// Teams of the rows kernel without a schedule: 8 on each of an H100's 132 SMs. Calls with at
/// least this many lines take the rows kernel by default.
inline constexpr std::int64_t rows_default_teams_cap = 1056;

/// scan.offload_rows: a team per line. On the host fallback it runs every offload strategy
/// (each line scanned serially by one host thread).
void launch_rows(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry);
ScanPlan rows_defaults(const CumulativeCall& call);

/// scan.offload_warp_rows: a warp per line.
void launch_warp_rows(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry);
ScanPlan warp_rows_defaults(const CumulativeCall& call);

/// scan.offload_columns: a scanned axis outside the contiguous one.
void launch_columns(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry);
ScanPlan columns_defaults(const CumulativeCall& call);

/// scan.offload_chained: few long lines, in tiles with decoupled look-back.
void launch_chained(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry);
ScanPlan chained_defaults(const CumulativeCall& call);

/// The fold of a one-line call's input, from inclusive_start, into *fold (the accumulator type of
/// its elements).
void fold_line(const CumulativeCall& call, int device, void* fold);

inline std::int64_t element_bytes(const CumulativeCall& call) {
  return visit_scan_type(call.input.desc.dtype(), [](auto t) { return std::int64_t(sizeof(t)); });
}

// Calls f(T{}) with the storage type whose kernels run `type`: unsigned integers run the kernels
// of their signed twins (both accumulate in the same unsigned type and store its bits, so the
// results are identical), which keeps the device image, and its compile time at the first call,
// smaller.
template <class F> void visit_kernel_type(DataType type, F&& f) {
  switch (type) {
    case DataType::float32: return f(float{});
    case DataType::float16: return f(float16_t{});
    case DataType::int32:
    case DataType::uint32: return f(std::int32_t{});
    case DataType::int64:
    case DataType::uint64: return f(std::int64_t{});
    default: break;
  }
  throw Error(Errc::invalid_type, "scan", "input", "internal: not a scan type");
}

// Calls f(s, x, y, Op{}) with the call's layout, its data as the kernel storage type and its
// combine.
template <class F> void visit_kernel(const CumulativeCall& call, F&& f) {
  const ScanLayout s = make_scan_layout(call);
  visit_kernel_type(call.input.desc.dtype(), [&](auto t) {
    using T = decltype(t);
    visit_combine(call.product, [&](auto op) {
      f(s, static_cast<const T*>(call.input.data), static_cast<T*>(call.output.data), op);
    });
  });
}

}  // namespace hk::detail::offload::scan
