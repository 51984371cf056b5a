// The offload schedules of the cumulative operators: OpenMP `target` kernels (schedules/offload/,
// the scan_*_launch.cpp files compiled with offload flags) and their limits, which the planner checks.
#pragma once

#include <cstdint>

#include "algorithms/cumulative.hpp"
#include "schedules/scan_schedules.hpp"

namespace hk::detail {

/// The tile kernels keep each thread's run of `items` consecutive elements in registers: at most
/// this many bytes of them per thread (rows: fewer, so that more teams fit an SM; chained: more,
/// for larger tiles and fewer look-backs).
inline constexpr std::int64_t offload_rows_max_item_bytes = 64;
inline constexpr std::int64_t offload_chained_max_item_bytes = 128;
inline constexpr std::int64_t offload_max_threads = 1024;
/// scan.offload_columns in one pass (chunks = 1): rows of the scanned axis per thread in a tile,
/// kept in registers (with the next tile's), and lines side by side per team. 2-byte types take
/// up to 16 rows, wider types up to 8: each (type, path) has its own kernel, whose registers hold
/// that many rows without spills (ptxas for sm_90: 245 registers for float16 16-byte vectors).
inline constexpr int offload_column_max_items = 16;
constexpr int offload_column_item_cap(std::int64_t element_bytes) { return element_bytes == 2 ? 16 : 8; }
inline constexpr int offload_column_max_width = 256;

/// Rows: at most this many tiles requested into the L2 ahead of the loads.
inline constexpr int offload_max_ahead = 8;

/// Runs a validated call with an offload plan; the data pointers are addresses on `device` (an
/// OpenMP device number, or the initial device for the host fallback). No transfers.
void run_scan_offload(const CumulativeCall& call, const ScanPlan& plan, int device);

/// Runs a validated call on host tensors with an offload plan: on a GPU, the tensors' spans are
/// copied to device memory and the output's back (counted as transfers); on the host fallback the
/// kernels run on the host memory directly.
void run_scan_offload_host(const CumulativeCall& call, const ScanPlan& plan);

/// The parameters an offload strategy takes when a schedule leaves them out.
ScanPlan offload_scan_defaults(const CumulativeCall& call, ScanPlan::Kind kind);

/// The offload plan a call on device tensors gets without a schedule: the strategy for its
/// layout (rows, columns or chained) with its defaults.
ScanPlan default_offload_scan_plan(const CumulativeCall& call);

}  // namespace hk::detail
