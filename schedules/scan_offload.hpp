// The offload schedules of the cumulative operators: OpenMP `target` kernels (schedules/offload/,
// the scan_*_launch.cpp files compiled with offload flags) and their limits (scan_limits.hpp), which
// the planner checks.
#pragma once

#include "algorithms/cumulative.hpp"
#include "schedules/offload/scan_limits.hpp"
#include "schedules/scan_offload_plan.hpp"

namespace hk::detail {

/// Runs a validated call with an offload plan; the data pointers are addresses on `device` (an
/// OpenMP device number, or the initial device for the host fallback). No transfers.
void run_scan_offload(const CumulativeCall& call, const ScanPlan& plan, int device);

/// Runs a validated call on host tensors with an offload plan on `device` (an OpenMP device
/// number; on the host fallback, offload_device()): on a GPU, the tensors' spans are copied to
/// device memory and the output's back (counted as transfers); on the host fallback the kernels
/// run on the host memory directly.
void run_scan_offload_host(const CumulativeCall& call, const ScanPlan& plan, int device);

/// The parameters an offload strategy takes when a schedule leaves them out.
ScanPlan offload_scan_defaults(const CumulativeCall& call, ScanPlan::Kind kind);

/// The offload plan a call on device tensors gets without a schedule: the strategy for its
/// layout (rows, columns or chained) with its defaults.
ScanPlan default_offload_scan_plan(const CumulativeCall& call);

}  // namespace hk::detail
