// The default schedule choice when a call names none and no tuning record applies.
#pragma once

#include "algorithms/cumulative.hpp"
#include "algorithms/quantized_matmul.hpp"
#include "schedules/qmm_strategies.hpp"
#include "schedules/scan_strategies.hpp"

namespace hk::detail {

/// The heuristic's plan for a call whose tensors lie at `home`: a host strategy for host tensors,
/// the offload strategy for the layout (scans) or qmm.offload_mma (matmul) for device tensors.
ScanStrategyPlan default_scan_plan(const CumulativeCall& call, DataHome home = DataHome::host);
QmmStrategyPlan default_qmm_plan(const QmmProblem& problem, DataHome home = DataHome::host);

#ifdef HETKERN_OFFLOAD
/// The offload strategy for the call's layout: scan.offload_rows, _columns or _chained.
const char* default_offload_scan_strategy(const CumulativeCall& call);
#endif

}  // namespace hk::detail
