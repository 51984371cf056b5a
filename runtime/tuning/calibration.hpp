// Measuring the machine's rates for the cost model: transfers both ways, the GPU call's fixed
// cost, and each host and offload strategy's throughput, on a few fixed shapes.
#pragma once

#include <cstdint>

#include "hetkern/tuning.hpp"

namespace hk::detail {

/// The shapes calibration measures on. The defaults take a few seconds on a GPU machine; the
/// tests pass tiny ones to run the same code on the host fallback.
struct CalibrationSizes {
  // Each transfer direction; large enough for the pageable copies' staging to reach its pace.
  std::int64_t copy_bytes = std::int64_t(64) << 20;
  std::int64_t scan_elements = std::int64_t(1) << 22;     // float32, the offload scans
  // float32, the parallel host scans; 0: at least scan_elements, and each tensor twice the host's
  // last-level caches together, so that the rate is memory's (docs/tuning.md).
  std::int64_t host_scan_elements = 0;
  std::int64_t single_thread_scan_elements = std::int64_t(1) << 15;  // scan.tiled: what it gets
  std::int64_t gpu_qmm_side = 2048;                       // M = N = K of the offload matmuls
  // qmm.parallel on host_qmm_rows x side x side: few rows against a wide B, whose packing on each
  // call a cube hides (docs/tuning.md).
  std::int64_t host_qmm_rows = 256;
  std::int64_t host_qmm_side = 2048;
  std::int64_t single_thread_qmm_side = 256;              // qmm.tiled
  int repetitions = 5;                                    // timed runs after one warm-up; median
};

/// Measures the rates with `sizes` on offload_device(), whatever it is (the host fallback too);
/// strategies that refuse a shape here are left out. Throws hk::Error when a device allocation
/// or a copy fails. Offload builds only; without one, measure_machine_rates() measures nothing.
MachineRates measure_rates(const CalibrationSizes& sizes);

}  // namespace hk::detail
