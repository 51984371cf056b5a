// The offload schedules of the cumulative operators: OpenMP `target` kernels (schedules/offload/,
// the scan_*_launch.cpp files compiled with offload flags) and their limits (scan_limits.hpp), which
// the planner checks.
#pragma once

#include <functional>

#include "algorithms/cumulative.hpp"
#include "schedules/offload/scan_limits.hpp"
#include "schedules/scan_offload_plan.hpp"

namespace hk::detail {

/// Runs a validated call with an offload plan; the data pointers are addresses on `device` (an
/// OpenMP device number, or the initial device for the host fallback). No transfers. `carry`,
/// where given, points at a value of the accumulator type of the call's elements (AccOf) that
/// every line continues from, as if it were the fold of elements before the line's first.
void run_scan_offload(const CumulativeCall& call, const ScanPlan& plan, int device, const void* carry = nullptr);

/// The fold of a validated one-line call's input (device addresses, as above), from
/// inclusive_start, into *fold (AccOf its element type): the carry the rest of a longer line
/// continues from.
void fold_scan_line_offload(const CumulativeCall& call, int device, void* fold);

/// Runs a validated call on host tensors with an offload plan on `device` (an OpenMP device
/// number; on the host fallback, offload_device()): on a GPU, the tensors' spans are copied to
/// device memory and the output's back (counted as transfers); on the host fallback the kernels
/// run on the host memory directly.
void run_scan_offload_host(const CumulativeCall& call, const ScanPlan& plan, int device);

/// What a part of a longer line on host tensors asks once it has its own fold (null where none was
/// wanted): the carry it continues from, an AccOf its element type that stays valid until the part
/// ends, or null to end without scanning (another part failed).
using ScanCarryFor = std::function<const void*(const void* fold)>;

/// A one-line call on host tensors that is a part of a longer line, on `device`: as
/// run_scan_offload_host with the default offload plan, except that the part first folds its
/// input (if `fold_wanted`) and asks `carry_for` for the carry it continues from, which may wait
/// for other parts' folds.
void run_scan_line_part_host(const CumulativeCall& call, int device, bool fold_wanted, const ScanCarryFor& carry_for);

/// The parameters an offload strategy takes when a schedule leaves them out.
ScanPlan offload_scan_defaults(const CumulativeCall& call, ScanPlan::Kind kind);

/// The offload plan a call on device tensors gets without a schedule: the strategy for its
/// layout (rows, columns or chained) with its defaults.
ScanPlan default_offload_scan_plan(const CumulativeCall& call);

}  // namespace hk::detail
