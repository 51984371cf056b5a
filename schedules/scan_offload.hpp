// The offload schedules of the cumulative operators: OpenMP `target` kernels (scan_offload.cpp,
// the only scan file compiled with offload flags) and their limits, which the planner checks.
#pragma once

#include <cstdint>

#include "algorithms/cumulative.hpp"
#include "schedules/scan_schedules.hpp"

namespace hk::detail {

/// Team-local memory of the tile kernels (rows, chained): the staged tile takes this much, the
/// per-thread partial folds up to offload_max_threads accumulators more; 48 KB per team in all.
inline constexpr std::int64_t offload_tile_bytes = 32 * 1024;
inline constexpr std::int64_t offload_max_threads = 1024;

/// Elements a tile of threads x items occupies once padded against shared-memory bank conflicts
/// (one spare element per 32).
constexpr std::int64_t offload_padded_tile(std::int64_t width) { return width + width / 32; }

/// Loads a thread of scan.offload_columns issues before it combines them.
inline constexpr int offload_column_batch = 32;

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
